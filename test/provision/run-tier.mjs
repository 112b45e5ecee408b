// `npm run test:tier -- <name> [Jest's options]`: runs one tier of test/provision/tiers.mjs with Jest, as
// `npm test` runs them all (ES modules on); a slow tier in the `slow` project, one file at a time, the others
// outside it. Without a name, or with an unknown one, it lists the tiers.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { SLOW_PROJECT, TIERS } from './tiers.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const JEST = `${ROOT}node_modules/jest/bin/jest.js`;

/** Jest's arguments for tier `name`: its paths as patterns anchored at the repository, and its project. */
function jestArguments(name, rest = []) {
  const tier = TIERS[name];
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // The slow files one at a time: the soak and the overload regressions load the machine, and time it.
  const projects = tier.slow ? ['--runInBand', '--selectProjects', SLOW_PROJECT] : ['--ignoreProjects', SLOW_PROJECT];
  return [...rest, ...projects, '--', ...tier.paths.map((path) => `^${escape(ROOT + path)}`)];
}

const [name, ...rest] = process.argv.slice(2);
if (name === undefined || !Object.hasOwn(TIERS, name)) {
  const list = Object.entries(TIERS).map(
    ([tier, { paths, needs }]) => `  ${tier.padEnd(12)} ${paths.join(' ')}  (${needs})`,
  );
  process.stderr.write(
    `${name === undefined ? 'Which tier?' : `No tier "${name}".`} npm run test:tier -- <name>:\n${list.join('\n')}\n`,
  );
  process.exit(2);
}
const options = [process.env.NODE_OPTIONS ?? '', '--experimental-vm-modules', '--disable-warning=ExperimentalWarning'];
const run = spawnSync(process.execPath, [JEST, ...jestArguments(name, rest)], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, NODE_OPTIONS: options.join(' ').trim() },
});
process.exit(run.status ?? 1);
