import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  cliArguments,
  type Configuration,
  DEFAULT_CONFIGURATIONS,
  runConfiguration,
} from '../../docs/.vitepress/theme/playground/configuration.js';
import { SIMULATED_ALGORITHMS } from '../../packages/simulator/src/request.js';
import type { SimulationResult } from '../../packages/simulator/src/run.js';
import { PATTERNS } from '../../packages/simulator/src/traffic.js';
import { readChart } from '../support/simulator-chart.js';

// The playground of the docs site (docs/playground.md) and `npm run simulate` must give the same numbers
// for the same inputs: each configuration below runs through the playground's own module and through the built
// command line, and the totals, the buckets and the chart are compared.

const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');
const BASE: Configuration = DEFAULT_CONFIGURATIONS[0];

/** Every drawn algorithm on every named pattern, then the fields the defaults leave out, one at a time. */
const CASES: { name: string; configuration: Configuration }[] = [
  ...SIMULATED_ALGORITHMS.flatMap((algorithm) =>
    PATTERNS.map((traffic) => ({ name: `${algorithm} on ${traffic}`, configuration: { ...BASE, algorithm, traffic } })),
  ),
  {
    name: 'token-bucket, burst 15, 10 per 1s, bursts at 30 per window for 5s',
    configuration: {
      ...BASE,
      algorithm: 'token-bucket',
      limit: '10',
      window: '1s',
      burst: '15',
      traffic: 'bursts',
      rate: '30',
      duration: '5s',
    },
  },
  {
    name: 'gcra, burst 20, 10 per 2000 ms, ramp to 40 per window',
    configuration: {
      ...BASE,
      algorithm: 'gcra',
      limit: '10',
      window: '2000',
      burst: '20',
      traffic: 'ramp',
      rate: '40',
    },
  },
  {
    name: 'sliding-window-counter, 5 per 10s, steady at 12 per window for 1m',
    configuration: {
      ...BASE,
      algorithm: 'sliding-window-counter',
      limit: '5',
      window: '10s',
      traffic: 'steady',
      rate: '12',
      duration: '1m',
    },
  },
  ...SIMULATED_ALGORITHMS.map((algorithm) => ({
    name: `${algorithm} on timestamps with costs, 3 per 1s`,
    configuration: {
      ...BASE,
      algorithm,
      limit: '3',
      window: '1s',
      traffic: 'timestamps' as const,
      timestamps: '0, 10, 20, 30, 990, 1000, 1001, {"atMs": 1500, "cost": 2}, 1999, 2000, {"atMs": 2400, "cost": 3}',
    },
  })),
];

interface CliLine {
  algorithm: string;
  admitted: number;
  denied: number;
  busiest: number;
}

/** `gcra: admitted 103, denied 97; most admitted in any 1m span: 103`, as the command line prints each result. */
function cliLines(stdout: string): CliLine[] {
  return [...stdout.matchAll(/^([a-z-]+): admitted (\d+), denied (\d+); most admitted in any \S+ span: (\d+)$/gm)].map(
    ([, algorithm = '', admitted, denied, busiest]) => ({
      algorithm,
      admitted: Number(admitted),
      denied: Number(denied),
      busiest: Number(busiest),
    }),
  );
}

const lineOf = (r: SimulationResult): CliLine => ({
  algorithm: r.policy.algorithm,
  admitted: r.admitted,
  denied: r.denied,
  busiest: r.busiestWindow.units,
});

describe('the playground gives the numbers of `npm run simulate` (packages/simulator/bin/simulate.mjs, built by npm run build:simulator)', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
    dir = mkdtempSync(join(tmpdir(), 'playground-parity-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(CASES)('$name', ({ configuration }) => {
    const playground = runConfiguration(configuration);
    if (!playground.ok) throw new Error(`the playground refused ${JSON.stringify(configuration)}: ${playground.error}`);
    const [result, ...others] = playground.results;
    expect(others).toHaveLength(0);
    if (result === undefined) throw new Error('the playground drew nothing');
    // A run that admits nothing or denies nothing compares little: each case has both, but steady traffic at its
    // default rate (half the limit), which every algorithm admits in full, and the boundary attack on the fixed
    // window, which it admits in full (the limit on each side of the edge: the attack the chart shows).
    const admitsAll =
      (configuration.traffic === 'steady' && configuration.rate === '') ||
      (configuration.algorithm === 'fixed-window' && configuration.traffic === 'boundary-burst');
    expect([result.admitted > 0, result.denied > 0]).toEqual([true, !admitsAll]);

    // The timestamps go to the command line as the JSON file the playground's field stands for.
    const file = join(dir, 'timestamps.json');
    writeFileSync(file, `[${configuration.timestamps}]`);
    const out = join(dir, 'chart.svg');
    const cli = spawnSync(process.execPath, [CLI, 'simulate', ...cliArguments(configuration, file), '--out', out], {
      encoding: 'utf8',
      cwd: dir,
    });
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);

    expect(cliLines(cli.stdout)).toEqual([lineOf(result)]);
    const svg = readFileSync(out, 'utf8');
    const { panels } = readChart(svg);
    expect(panels.map((p) => [p.algorithm, p.admitted, p.denied])).toEqual([
      [result.policy.algorithm, result.admitted, result.denied],
    ]);
    expect(panels[0]?.buckets).toEqual(result.buckets.map((b) => ({ ...b })));
    if (configuration.traffic === 'timestamps') {
      // The chart names its source: the file's path on the command line, "your timestamps" on the page.
      expect(svg.replaceAll(file, 'your timestamps')).toBe(playground.svg);
    } else {
      expect(svg).toBe(playground.svg);
    }
  });

  it('says which field is wrong, in the words of the form', () => {
    const refused = (fields: Partial<Configuration>) => {
      const outcome = runConfiguration({ ...BASE, ...fields });
      return outcome.ok ? 'drawn' : outcome.error;
    };
    expect(refused({ limit: '0' })).toBe('Limit must be an integer >= 1, got "0"');
    expect(refused({ window: '1x' })).toMatch(/^Window must be a whole number of ms >= 1 or a duration like '500ms'/);
    expect(refused({ algorithm: 'gcra', limit: '1', window: '1d', burst: '10000000' })).toMatch(
      /^Burst: burst × emission interval \(window \/ limit\) must not exceed 2\^51 µs/,
    );
    expect(refused({ traffic: 'timestamps', timestamps: '0, 10, -5' })).toBe(
      'your timestamps, element 2: atMs must be a whole number of ms >= 0 after the start, got -5',
    );
    expect(refused({ traffic: 'timestamps', timestamps: '0, 10,' })).toMatch(/^your timestamps: is not a JSON array: /);
    // Past its own bound (the boundary attack lays out twice the limit) the page says so rather than freeze.
    expect(refused({ limit: '50000' })).toBe('drawn');
    expect(refused({ limit: '50001' })).toBe(
      'Traffic: boundary-burst lays out 100002 requests; the playground draws at most 100000 (lower the rate, the ' +
        'limit or the duration; the command line draws up to 2000000)',
    );
    // The window algorithms take no burst: the form disables the field, and a value left in it is not used.
    expect(refused({ algorithm: 'fixed-window', burst: '500' })).toBe('drawn');
  });
});
