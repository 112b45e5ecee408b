// The programs the tests start: found on the PATH, installed with apt-get as root on Debian or Ubuntu, or one
// error naming the command that installs each. Jest's global setup calls it before the first test; npm test
// (before its build) and .ci/run (before `npm ci`: it imports nothing from node_modules) run this file.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { decideTools, missingToolsError, packageManagerOf, TOOLS } from './decide.mjs';

/** What the machine lacks: Jest prints it without a stack, which would only bury the command to run. */
export class ProvisionError extends Error {
  constructor(message) {
    super(message);
    this.stack = '';
  }
}

export function say(line) {
  process.stderr.write(`provision: ${line}\n`);
}

/** The executable `name` on the PATH, or undefined. */
export function onPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

// The browser tests launch the path of test/support/chromium.json (Debian's), else a chromium on the PATH.
const CHROMIUM_JSON = new URL('../support/chromium.json', import.meta.url);

function find(tool, env) {
  if (tool === 'chromium') {
    const { executablePath } = JSON.parse(readFileSync(CHROMIUM_JSON, 'utf8'));
    if (existsSync(executablePath)) return executablePath;
  }
  return onPath(tool, env);
}

/** What this machine is, for the decisions of decide.mjs. */
export function machine() {
  const osRelease = existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '';
  return { manager: packageManagerOf(process.platform, osRelease), root: process.getuid?.() === 0 };
}

function run(command, args) {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (result.error !== undefined || result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new ProvisionError(`\`${command} ${args.join(' ')}\` failed: ${result.error?.message ?? output}`);
  }
}

/**
 * Makes sure `tools` (names of TOOLS) are on this machine, and returns where each is. Throws one error for
 * all that are missing and cannot be installed here, before anything is installed; it names the other tools
 * missing too (the other tiers' global setups would stop the next run for them).
 */
export function provisionTools(tools, { env = process.env, here = machine() } = {}) {
  const all = decideTools(Object.fromEntries(Object.keys(TOOLS).map((tool) => [tool, find(tool, env)])), here);
  const decisions = all.filter((decision) => tools.includes(decision.tool));
  const error = missingToolsError(
    decisions,
    all.filter((decision) => !tools.includes(decision.tool)),
  );
  if (error !== undefined) throw new ProvisionError(error);
  const packages = decisions.filter((d) => d.action === 'install').map((d) => d.package);
  if (packages.length > 0) {
    say(`installing ${packages.join(' and ')} with apt-get`);
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', ...packages]);
  }
  const paths = {};
  for (const decision of decisions) {
    const path = decision.action === 'found' ? decision.path : find(decision.tool, env);
    if (path === undefined)
      throw new ProvisionError(`${decision.tool}: apt-get installed ${decision.package}, yet it is not on the PATH`);
    say(`${decision.tool}: ${decision.action === 'found' ? 'found' : 'installed'} at ${path}`);
    paths[decision.tool] = path;
  }
  return paths;
}

// `node test/provision/provision.mjs` (npm test's pretest, .ci/run): every program. PostgreSQL is decided by
// the test run itself, which starts and stops an embedded one when it needs it.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    provisionTools(Object.keys(TOOLS));
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
