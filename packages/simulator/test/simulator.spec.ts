import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import fc from 'fast-check';

import { MemoryRateLimitStore, validatePolicy } from '../../../lib/index.js';
import { ALGORITHMS } from '../../../lib/policy/policy.types.js';
import {
  buildPattern,
  NOT_SIMULATED,
  runSimulation,
  SIMULATED_ALGORITHMS,
  simulate,
  type ChartData,
} from '../src/index.js';
import { SimulatedClock } from '../src/run.js';
import { arrivalsTraffic } from '../src/traffic.js';
import { nth } from '../../../test/support/harness.js';
import { type DrawnBucket, type DrawnPanel, readChart } from '../../../test/support/simulator-chart.js';
import { policyOf } from '../../../test/support/policies.js';

const LIMIT = 100;
const W = 60_000;
const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');

const sum = (buckets: readonly DrawnBucket[], key: 'admitted' | 'denied', fromMs = 0, toMs = Infinity) =>
  buckets.filter((b) => b.startMs >= fromMs && b.endMs <= toMs).reduce((total, b) => total + b[key], 0);

/** The most admitted in `n` consecutive buckets: an upper bound of what any span of n−1 buckets admits. */
const mostInRun = (buckets: readonly DrawnBucket[], n: number) =>
  Math.max(...buckets.map((_, i) => sum(buckets.slice(i, i + n), 'admitted')));

describe('simulator: the boundary attack, 100 per 1m (100 in the second before the edge at 1m, 100 after)', () => {
  const { svg } = runSimulation({ algorithm: 'all', limit: LIMIT, window: '1m', traffic: 'boundary-burst' });
  const { panels, metadata } = readChart(svg);
  const byName = Object.fromEntries(panels.map((p) => [p.algorithm, p]));
  const panelOf = (algorithm: string): DrawnPanel => {
    const panel = byName[algorithm];
    if (panel === undefined) throw new Error(`the chart has no panel for ${algorithm}`);
    return panel;
  };
  const attack = { fromMs: W - 1000, toMs: W + 1000 };

  it('draws every algorithm of ALGORITHMS but the two it says it cannot simulate', () => {
    expect(panels.map((p) => p.algorithm)).toEqual(ALGORITHMS.filter((a) => !Object.hasOwn(NOT_SIMULATED, a)));
    expect([...SIMULATED_ALGORITHMS, ...Object.keys(NOT_SIMULATED)].sort()).toEqual([...ALGORITHMS].sort());
  });

  it('draws the five algorithms, each bar holding what its bucket decided and the totals agreeing', () => {
    expect(panels.map((p) => p.algorithm)).toEqual([...SIMULATED_ALGORITHMS]);
    for (const p of panels) {
      expect(p.buckets).toHaveLength(120); // 2 minutes in 1 s buckets
      expect(sum(p.buckets, 'admitted')).toBe(p.admitted);
      expect(sum(p.buckets, 'admitted') + sum(p.buckets, 'denied')).toBe(2 * LIMIT);
    }
    expect((metadata as ChartData[]).map((m) => [m.algorithm, m.admitted])).toEqual(
      panels.map((p) => [p.algorithm, p.admitted]),
    );
  });

  it('marks the edge between the two windows in every panel, and none where they would be past 200', () => {
    const edges = (chart: string) =>
      chart
        .split('<g class="panel"')
        .slice(1)
        .map((chunk) => chunk.match(/class="window-edge"/g)?.length ?? 0);
    expect(edges(svg)).toEqual(SIMULATED_ALGORITHMS.map(() => 1));
    const dense = runSimulation({ algorithm: 'gcra', limit: 10, window: '100ms', traffic: 'steady', durationMs: W });
    expect(edges(dense.svg)).toEqual([0]);
  });

  it('the fixed window admits 2 × limit = 200 within 2 seconds: the limit in each of the two windows', () => {
    const fixed = panelOf('fixed-window');
    expect(sum(fixed.buckets, 'admitted', attack.fromMs, W)).toBe(LIMIT);
    expect(sum(fixed.buckets, 'admitted', W, attack.toMs)).toBe(LIMIT);
    expect(sum(fixed.buckets, 'admitted', attack.fromMs, attack.toMs)).toBe(2 * LIMIT);
    expect(fixed.denied).toBe(0);
    expect(mostInRun(fixed.buckets, 2)).toBe(2 * LIMIT);
  });

  it('the sliding log admits 100: never more than the limit in any window-long span', () => {
    const log = panelOf('sliding-window-log');
    expect(sum(log.buckets, 'admitted', attack.fromMs, W)).toBe(LIMIT);
    expect(sum(log.buckets, 'admitted', W, attack.toMs)).toBe(0);
    expect(log.admitted).toBe(LIMIT);
    // 61 one-second buckets cover any 60 s span, so their sum bounds what such a span admitted.
    expect(mostInRun(log.buckets, 61)).toBeLessThanOrEqual(LIMIT);
    expect((metadata as ChartData[])[1]?.busiestWindow.units).toBe(LIMIT);
  });

  it('the sliding counter admits one more for each 1/limit of the window elapsed since the edge', () => {
    // After the edge: previous (100) × (1 − e / W) + admitted ≤ 100 lets one through per W / limit = 600 ms,
    // and the last request after the edge comes at e = 990 ms.
    const expected = LIMIT + Math.floor((990 * LIMIT) / W);
    expect(expected).toBe(101);
    expect(panelOf('sliding-window-counter').admitted).toBe(expected);
  });

  it('the token bucket and GCRA admit the full bucket plus what refills during the 2 s attack', () => {
    // Capacity 100, refilled at 100 per minute; arrivals every 10 ms take each token as soon as it is whole.
    const expected = LIMIT + Math.floor(((W + 990 - (W - 1000)) * LIMIT) / W);
    expect(expected).toBe(103);
    expect(panelOf('token-bucket').admitted).toBe(expected);
    expect(panelOf('gcra').admitted).toBe(expected);
  });
});

describe('simulator: the same decisions as the memory store', () => {
  // Every algorithm, the two the command line does not draw included: simulate() runs any policy's step.
  it.each([...ALGORITHMS])(
    '%s, on the boundary attack and on bursts, with a burst of 150 for the buckets',
    async (algorithm) => {
      const fields = policyOf(algorithm, { limit: LIMIT, window: '1m' });
      const bucket = fields.algorithm === 'token-bucket' || fields.algorithm === 'gcra';
      const policy = validatePolicy(bucket ? { ...fields, burst: 150 } : fields);
      let denials = 0;
      for (const name of ['boundary-burst', 'bursts'] as const) {
        const result = simulate(policy, buildPattern(name, { limit: LIMIT, windowMs: W }));
        const clock = new SimulatedClock(result.startMs);
        const store = new MemoryRateLimitStore({ clock });
        const decided: boolean[] = [];
        for (const arrival of result.traffic.arrivals) {
          clock.set(result.startMs + arrival.atMs);
          const decision = nth(await store.consume([{ policy, key: 'client', cost: arrival.cost }]), 0);
          decided.push(decision.allowed);
        }
        expect(result.decisions.map((d) => d.allowed)).toEqual(decided);
        denials += decided.filter((allowed) => !allowed).length;
      }
      expect(denials).toBeGreaterThan(0); // so that the comparison covers denials, not only admissions
    },
  );
});

describe('simulator: traffic patterns', () => {
  it('steady traffic below the limit (90 per 1m) is all admitted, by every algorithm', () => {
    const { svg } = runSimulation({
      algorithm: 'all',
      limit: LIMIT,
      window: '1m',
      traffic: 'steady',
      ratePerWindow: 90,
    });
    const { panels } = readChart(svg);
    expect(panels).toHaveLength(5);
    for (const p of panels) {
      expect([p.algorithm, p.admitted, p.denied]).toEqual([p.algorithm, 270, 0]); // 3 minutes at 90 a minute
      expect(p.buckets.every((b) => b.denied === 0)).toBe(true);
    }
  });

  it('lays out the boundary attack, bursts and a ramp as their definitions say', () => {
    const boundary = buildPattern('boundary-burst', { limit: LIMIT, windowMs: W }).arrivals.map((a) => a.atMs);
    expect(boundary.filter((t) => t >= W - 1000 && t < W)).toHaveLength(LIMIT);
    expect(boundary.filter((t) => t >= W && t < W + 1000)).toHaveLength(LIMIT);
    expect(boundary).toHaveLength(2 * LIMIT);
    const bursts = buildPattern('bursts', { limit: LIMIT, windowMs: W }).arrivals;
    expect(bursts).toHaveLength(6 * 75); // a burst of 75 every 30 s for 3 minutes, starting at 15 s
    expect(bursts[0]?.atMs).toBe(15_000);
    // A rate rising from 0 to 200 per minute over 4 minutes: 200 × 4 / 2 = 400 requests, the 400th at the end.
    expect(buildPattern('ramp', { limit: LIMIT, windowMs: W }).arrivals).toHaveLength(399);
  });

  it('counts a window-long span as [t, t + window): a request exactly one window after another shares none with it', () => {
    const traffic = arrivalsTraffic(
      'edge',
      [0, 1000, 1999].map((atMs) => ({ atMs, cost: 1 })),
      1000,
    );
    const log = simulate(validatePolicy({ algorithm: 'sliding-window-log', limit: 1, window: 1000 }), traffic);
    expect(log.decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(log.busiestWindow).toEqual({ fromMs: 0, units: 1 });
    expect(log.trailing).toEqual([
      { atMs: 0, units: 1 },
      { atMs: 1000, units: 1 },
      { atMs: 2000, units: 0 },
    ]);
  });

  it('never lets the sliding log admit more than the limit in a window, nor the fixed window more than twice it', () => {
    const arrivals = fc.array(
      fc.record({ atMs: fc.integer({ min: 0, max: 5000 }), cost: fc.integer({ min: 0, max: 3 }) }),
      {
        maxLength: 200,
      },
    );
    fc.assert(
      fc.property(
        arrivals,
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 2000 }),
        (list, limit, windowMs) => {
          const traffic = arrivalsTraffic(
            'random',
            [...list].sort((a, b) => a.atMs - b.atMs),
            windowMs,
          );
          const log = simulate(validatePolicy({ algorithm: 'sliding-window-log', limit, window: windowMs }), traffic);
          const fixed = simulate(validatePolicy({ algorithm: 'fixed-window', limit, window: windowMs }), traffic);
          expect(log.busiestWindow.units).toBeLessThanOrEqual(limit);
          expect(fixed.busiestWindow.units).toBeLessThanOrEqual(2 * limit);
          expect(Math.max(0, ...log.trailing.map((p) => p.units))).toBe(log.busiestWindow.units);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('simulator: a JSON file of arrivals', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'simulator-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads times and { atMs, cost }, and decides them with the policy', () => {
    const file = join(dir, 'arrivals.json');
    // 3 per 1 s, fixed window: 2 + 2 > 3 denies the second; the third fits; at 1 s a new window admits 3 of 4.
    writeFileSync(file, JSON.stringify([{ atMs: 0, cost: 2 }, { atMs: 10, cost: 2 }, 20, 1000, 1001, 1002, 1003]));
    const { svg, results } = runSimulation({ algorithm: 'fixed-window', limit: 3, window: 1000, traffic: file });
    const { panels, metadata } = readChart(svg);
    expect(results[0]?.decisions.map((d) => d.allowed)).toEqual([true, false, true, true, true, true, false]);
    const panel = nth(panels, 0);
    expect([panel.admitted, panel.denied]).toEqual([5, 2]);
    expect(sum(panel.buckets, 'admitted', 0, 1000)).toBe(2);
    expect(sum(panel.buckets, 'denied', 1000, 2000)).toBe(1);
    expect(metadata).toMatchObject({ admitted: 5, admittedUnits: 6, durationMs: 2000 });
  });

  it('names the file and the element at fault', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify([0, 10, { atMs: -5 }]));
    expect(() => runSimulation({ algorithm: 'gcra', limit: 3, window: 1000, traffic: file })).toThrow(
      `--traffic ${file}, element 2: atMs must be a whole number of ms >= 0 after the start, got -5`,
    );
  });
});

describe('simulator: the command line (packages/simulator, built by npm run build:simulator)', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
    dir = mkdtempSync(join(tmpdir(), 'simulator-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir });

  it('writes the chart of `simulate --algorithm gcra --limit 100 --window 1m --traffic boundary-burst`', () => {
    const out = join(dir, 'charts', 'gcra.svg');
    const result = run(
      'simulate',
      '--algorithm',
      'gcra',
      '--limit',
      '100',
      '--window',
      '1m',
      '--traffic',
      'boundary-burst',
      '--out',
      out,
    );
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('gcra: admitted 103, denied 97');
    const { panels, metadata } = readChart(readFileSync(out, 'utf8'));
    expect([panels[0]?.algorithm, panels[0]?.admitted, panels[0]?.denied]).toEqual(['gcra', 103, 97]);
    expect(metadata).toMatchObject({
      algorithm: 'gcra',
      traffic: 'boundary-burst',
      policy: { limit: 100, windowMs: W },
    });
  });

  it.each([
    [['--limit', '0'], '--limit must be an integer >= 1, got "0"'],
    [['--limt', '5'], 'unknown flag --limt (did you mean --limit?)'],
    [['--window', '1x'], `--window must be a whole number of ms >= 1 or a duration like '500ms'`],
    [['--algorithm', 'leaky-bucket'], '--algorithm must be one of fixed-window, sliding-window-log'],
    [['--algorithm', 'quota'], '--algorithm quota is not simulated: a quota counts per calendar day or month'],
    [['--algorithm', 'concurrency'], '--algorithm concurrency is not simulated: a concurrency limit counts requests'],
    [['--algorithm', 'fixed-window', '--burst', '5'], '--burst: applies only to token-bucket and gcra'],
    [['--traffic', 'nowhere.json'], '--traffic: must be steady, bursts, boundary-burst, ramp or the path'],
    [['--out'], '--out needs a value'],
    [
      ['--traffic', 'steady', '--rate', '1000000000', '--duration', '1d'],
      '--traffic: steady at 1000000000 per 1m for 1d',
    ],
    [['--traffic', 'arrivals.json', '--rate', '5'], '--rate shapes the named patterns'],
  ])('rejects %j with a message naming the flag, and exit code 2', (args, message) => {
    const result = run('simulate', ...args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`simulate: ${message}`);
    expect(result.stderr).toContain('Run `npm run simulate -- --help` for the flags.');
    expect(result.stdout).toBe('');
  });

  it('prints its flags for --help', () => {
    const result = run('simulate', '--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(
      /Usage \(from a clone of the repository\): npm run simulate -- \[flags\][\s\S]*--algorithm[\s\S]*--traffic[\s\S]*--out/,
    );
  });
});
