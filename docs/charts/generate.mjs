// Regenerates the charts of README.md's "The algorithms" with the published command line (`npm run charts`,
// which builds first): each algorithm on the fixed window's boundary attack, and all five side by side.
import { execFileSync } from 'node:child_process';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', '..', 'packages', 'simulator', 'bin', 'simulate.mjs');
const policy = ['--limit', '100', '--window', '1m'];
const charts = [
  ...['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'].map((algorithm) => [
    algorithm,
    'boundary-burst',
  ]),
  ['all', 'boundary-burst'],
  ['all', 'bursts'],
  ['all', 'ramp'],
];

for (const [algorithm, traffic] of charts) {
  const out = join(here, `${algorithm}-${traffic}.svg`);
  const args = ['simulate', '--algorithm', algorithm, ...policy, '--traffic', traffic, '--out', out];
  execFileSync(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  console.log(`wrote ${relative(process.cwd(), out)}`);
}
