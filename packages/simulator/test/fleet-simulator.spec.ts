import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  FLEET_ALGORITHMS,
  fleetSvg,
  LEASE_MODES,
  mostShort,
  parseSimulateFleet,
  runFleet,
  type FleetChartData,
  type FleetOptions,
  type FleetResult,
  type FleetWindow,
} from '../src/fleet/index.js';
import { mostInAnyWindow } from '../../../test/support/admissions.js';

/**
 * A run of 100,000 requests or more: each request goes through a real DecisionEngine, some seconds on a loaded
 * machine.
 */
const LONG_RUN_MS = 300_000;

const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');

/** The admissions of a run, recorded, for checks that do not trust its own BoundCheck. */
function admissions(r: FleetResult): readonly number[] {
  if (r.admittedAtMs === undefined) throw new Error('the run was not recorded');
  return r.admittedAtMs;
}

/** Fixed window: the most units admitted in one window `[k·W, (k+1)·W)`. */
function mostPerWindow(times: readonly number[], windowMs: number): number {
  const counts = new Map<number, number>();
  for (const t of times) counts.set(Math.floor(t / windowMs), (counts.get(Math.floor(t / windowMs)) ?? 0) + 1);
  return Math.max(0, ...counts.values());
}

/**
 * Sliding window counter: the largest of its estimate at an admission, this window's units so far plus the last
 * window's weighted by the part of it still in the trailing window, times the window (exact integers).
 */
function mostEstimateTimesWindow(times: readonly number[], windowMs: number): number {
  const counts = new Map<number, number>();
  let most = 0;
  for (const t of times) {
    const index = Math.floor(t / windowMs);
    const current = (counts.get(index) ?? 0) + 1;
    counts.set(index, current);
    const elapsed = t - index * windowMs;
    most = Math.max(most, current * windowMs + (counts.get(index - 1) ?? 0) * (windowMs - elapsed));
  }
  return most;
}

/** Checks every admission of a recorded run against what its algorithm allows, and the run's own check agrees. */
function expectWithinTheAlgorithm(r: FleetResult): void {
  const times = admissions(r);
  const { algorithm, limit, windowMs, capacity } = r.policy;
  if (algorithm === 'fixed-window') {
    expect(mostPerWindow(times, windowMs)).toBeLessThanOrEqual(limit);
    expect(r.bound.most).toBe(mostPerWindow(times, windowMs));
  } else if (algorithm === 'sliding-window-counter') {
    expect(mostEstimateTimesWindow(times, windowMs)).toBeLessThanOrEqual(limit * windowMs);
    expect(mostPerWindow(times, windowMs)).toBeLessThanOrEqual(limit);
    expect(r.bound.most * windowMs).toBeCloseTo(mostEstimateTimesWindow(times, windowMs), 3);
  } else {
    // Over any span shorter than L ms: at most the burst plus what refills in L.
    for (const spanMs of [1, 10, 100, windowMs / 2, windowMs, 2 * windowMs]) {
      expect(mostInAnyWindow(times, spanMs)).toBeLessThanOrEqual(capacity + (limit * spanMs) / windowMs);
    }
    expect(r.bound.most).toBeLessThanOrEqual(capacity + 1e-6);
  }
  expect(r.bound.most).toBeLessThanOrEqual(r.bound.allowed + 1e-6);
}

/** Traffic scenarios, each exhausting the key; every algorithm × lease mode runs each. */
const SCENARIOS: Record<string, Partial<FleetOptions>> = {
  'twice the limit, Poisson, 1 ms round trip': {
    ...{ instances: 20, ratePerSecond: 12_000, limit: 6000, lease: 50, durationMs: 2000 },
  },
  'evenly spaced, skewed shares, 5 ms round trip (many takes in flight), 200 ms windows': {
    ...{ instances: 20, ratePerSecond: 40_000, limit: 5000, windowMs: 200, lease: 50, durationMs: 1000 },
    ...{ rttUs: 5000, arrivals: 'even', skew: 1, seed: 7 },
  },
  // replies no longer come back in the order the calls went out
  'round trips that vary by ± 400 µs each way around 1 ms': {
    ...{ instances: 20, ratePerSecond: 12_000, limit: 6000, lease: 50, durationMs: 2000, rttJitterUs: 800 },
  },
  '250 µs round trip, lease 100, seed 3': {
    ...{ instances: 10, ratePerSecond: 20_000, limit: 6000, lease: 100, durationMs: 1500 },
    ...{ rttUs: 250, seed: 3 },
  },
};

describe('fleet simulation: the fleet never admits more than the algorithm allows', () => {
  describe.each(Object.entries(SCENARIOS))('%s', (_name, scenario) => {
    it.each(FLEET_ALGORITHMS.flatMap((algorithm) => LEASE_MODES.map((growth) => [algorithm, growth] as const)))(
      '%s, lease %s',
      async (algorithm, growth) => {
        const r = await runFleet({ ...scenario, algorithm, growth }, { record: true });
        expect(r.admitted).toBeLessThan(r.offered); // the key was exhausted: the bound was tested
        expectWithinTheAlgorithm(r);
        // No instance ever spent a unit the store had not counted for it (the leases' own invariant).
        expect(r.overspent).toBe(0);
        expect(r.admitted).toBeLessThanOrEqual(r.granted);
      },
    );
  });

  it('token bucket and GCRA with a burst twice the limit: the burst plus the refill over any span', async () => {
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      for (const growth of LEASE_MODES) {
        const scenario = { instances: 10, ratePerSecond: 25_000, limit: 6000, burst: 12_000, durationMs: 1500 };
        const r = await runFleet({ ...scenario, algorithm, growth, lease: 100 }, { record: true });
        expectWithinTheAlgorithm(r);
        expect(r.bound.most).toBeGreaterThan(6000); // the burst was used: more than the limit's worth at once
      }
    }
  });

  it('with no lease a fixed window admits exactly the limit in each exhausted window: the check is tight', async () => {
    const r = await runFleet(
      { ...SCENARIOS['twice the limit, Poisson, 1 ms round trip'], growth: 'off' },
      { record: true },
    );
    expect(r.windows.map((w) => w.admitted)).toEqual([6000, 6000]);
    expect(mostPerWindow(admissions(r), 1000)).toBe(6000);
  });
});

describe('fleet simulation: store calls per request on a hot key', () => {
  // 20 instances offering 90% of the limit: every request is admitted, and each a store call without leases.
  const calm = { instances: 20, ratePerSecond: 18_000, limit: 20_000, lease: 50, durationMs: 3000 };

  it.each(FLEET_ALGORITHMS)('%s: one call per request without leases; leases admit as much', async (a) => {
    const off = await runFleet({ ...calm, algorithm: a, growth: 'off' });
    expect(off.storeCalls).toBe(off.offered);
    const growing = await runFleet({ ...calm, algorithm: a, growth: 'growing' });
    expect(growing.admitted).toBeGreaterThan(0.97 * off.admitted);
  });

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: fewer than 2 / lease with growing takes',
    async (a) => {
      const growing = await runFleet({ ...calm, algorithm: a, growth: 'growing' });
      expect(growing.storeCalls / growing.offered).toBeLessThan(2 / calm.lease);
    },
  );

  // By design: a bucket below its rate stays near full, and units taken ahead from a full bucket could add to a
  // later full burst (leaseLifetimeMs gives them no lifetime), so growing takes stay at one unit there
  // (docs/hot-keys.md says so).
  it.each(['token-bucket', 'gcra'] as const)(
    '%s with growing takes below the rate: takes never grow, about one store call per two requests or more',
    async (algorithm) => {
      const growing = await runFleet({ ...calm, algorithm, growth: 'growing' });
      expect(growing.storeCalls / growing.offered).toBeGreaterThan(0.4);
    },
  );

  it('a fixed window at twice the limit with the cache of denials: about 1 / lease of the admitted requests', async () => {
    const hot = SCENARIOS['twice the limit, Poisson, 1 ms round trip'];
    const r = await runFleet({ ...hot, growth: 'growing' });
    expect(r.storeCalls / r.admitted).toBeLessThan(2 / 50);
    const off = await runFleet({ ...hot, growth: 'off' });
    expect(off.storeCalls).toBeGreaterThanOrEqual(off.admitted);
  });
});

describe('fleet simulation: under-admission', () => {
  // 20 instances of 525 requests a second, 5% over a fixed window of 10,000 a second.
  const near = { instances: 20, ratePerSecond: 10_500, limit: 10_000, lease: 50, durationMs: 3000 };

  it.each([0, 200, 1000])(
    'within instances × lease per window with at most one take in flight (%i µs)',
    async (rttUs) => {
      const r = await runFleet({ ...near, rttUs, growth: 'growing' });
      expect(mostShort(r)).toBeLessThanOrEqual(near.instances * near.lease);
    },
  );

  // Regression: every request that found no units while a take was in flight sent a take of its own, each for
  // up to `lease`, so an instance held about (requests per round trip) × lease and the fleet fell short far
  // beyond instances × lease (7,125 short of a window against a bound of 1,000 here). Now a key has one take on
  // its way per instance and its other requests wait for it: a window in the steady state falls short by no more
  // than one lease an instance. (The first window also has the takes' growth, and a window's last requests that
  // wait for a take are admitted in the next one.)
  it(
    'within instances × lease with many requests in flight in each instance (regression: concurrent takes)',
    async () => {
      const stacked = { instances: 20, ratePerSecond: 200_000, limit: 199_000, lease: 50, durationMs: 3000 };
      const r = await runFleet({ ...stacked, rttUs: 5000, growth: 'growing' });
      const middle = r.windows[1] as FleetWindow;
      expect(Math.min(middle.offered, stacked.limit) - middle.admitted).toBeLessThanOrEqual(
        stacked.instances * stacked.lease,
      );
      // and about one store call per lease of requests
      expect(r.storeCalls / r.offered).toBeLessThan(0.05);
    },
    LONG_RUN_MS,
  );
});

describe('fleet simulation: shares of a leased key past its limit', () => {
  // With a round trip of exactly 1 ms, an instance whose takes reach the store just after the bucket's refill
  // (once per ms of the store's clock) keeps reaching it then, and instances split into those admitting all they
  // are offered and those admitting none (docs/fleet-simulation.md). Round trips that vary break that rhythm.
  const overloaded = { instances: 20, ratePerSecond: 40_000, limit: 20_000, lease: 50, durationMs: 3000 };

  it.each(['sliding-window-counter', 'token-bucket', 'gcra'] as const)(
    '%s: with round trips varying by ± 100 µs each way, every instance gets at least 0.7 of its share',
    async (algorithm) => {
      const r = await runFleet({ ...overloaded, algorithm, rttJitterUs: 200 });
      expect(r.admitted).toBeLessThan(r.offered * 0.7); // past the limit (a bucket: its burst, then its rate)
      for (const second of r.seconds) expect(second.share.min * overloaded.instances).toBeGreaterThanOrEqual(0.7);
    },
    LONG_RUN_MS,
  );
});

describe('fleet simulation: output', () => {
  const small = { instances: 8, ratePerSecond: 8000, limit: 5000, lease: 20, durationMs: 2000 };

  it('is the same for the same seed and differs for another', async () => {
    const strip = (r: FleetResult) => ({ ...r, options: undefined });
    expect(strip(await runFleet({ ...small, seed: 5 }))).toEqual(strip(await runFleet({ ...small, seed: 5 })));
    expect((await runFleet({ ...small, seed: 5 })).seconds).not.toEqual(
      (await runFleet({ ...small, seed: 6 })).seconds,
    );
  });

  it('counts each second: offered and admitted add up, shares of instances sum to about one', async () => {
    const r = await runFleet(small);
    expect(r.seconds).toHaveLength(2);
    expect(r.seconds.reduce((n, s) => n + s.offered, 0)).toBe(r.offered);
    expect(r.slots.reduce((n, s) => n + s.admitted, 0)).toBe(r.admitted);
    for (const s of r.seconds) {
      expect(s.share.min).toBeLessThanOrEqual(s.share.median);
      expect(s.share.median).toBeLessThanOrEqual(s.share.max);
      expect(s.share.min * small.instances).toBeLessThanOrEqual(1);
      expect(s.share.max * small.instances).toBeGreaterThanOrEqual(1);
    }
  });

  it('charts each algorithm with its lease modes, the numbers in <metadata>', async () => {
    const runs: FleetResult[] = [];
    for (const algorithm of FLEET_ALGORITHMS) {
      for (const growth of LEASE_MODES) runs.push(await runFleet({ ...small, algorithm, growth }));
    }
    const svg = fleetSvg(runs);
    expect(svg.match(/<g class="fleet-row" data-algorithm="([^"]+)"/g)).toHaveLength(4);
    expect(svg.match(/<path class="admitted" data-growth="/g)).toHaveLength(8);
    const data = JSON.parse(/<metadata id="fleet">(.*)<\/metadata>/s.exec(svg)?.[1] ?? 'null') as FleetChartData[];
    expect(data.map((d) => [d.algorithm, d.growth, d.storeCalls])).toEqual(
      runs.map((r) => [r.policy.algorithm, r.options.growth, r.storeCalls]),
    );
  });
});

describe('simulate-fleet: flags', () => {
  it.each([
    [['--rtt', 'soon'], "--rtt must be a duration like '1ms', '250us', '0' or '2s', got \"soon\""],
    [['--growth', 'doubling'], '--growth must be one of off, growing or all, got "doubling"'],
    [['--algorithm', 'sliding-window-log'], 'the algorithms whose units an instance can lease'],
    [['--instances', '0'], '--instances must be an integer >= 1, got "0"'],
    [['--lease', '1'], '--lease: must be an integer >= 2'],
    [['--skew', 'high'], '--skew must be a number from 0 to 4, got "high"'],
    [['--skew', '9'], '--skew: must be a number from 0 to 4, got 9'],
    [['--burst', '5'], '--burst is the capacity of token-bucket and gcra, not of fixed-window'],
    [['--growth', 'fixed'], '--growth must be one of off, growing or all, got "fixed"'],
    [['--rate', '100000000'], 'at most 50000000 are simulated (lower --rate or --duration)'],
    [['--growht', 'off'], 'unknown flag --growht (did you mean --growth?)'],
    [['--out', 'chart.png'], '--out must name an .svg file, got "chart.png"'],
    [['--window', '1 fortnight'], "--window must be a whole number of ms >= 1 or a duration like '500ms'"],
    [['--rtt-jitter', 'some'], "--rtt-jitter must be a duration like '1ms', '250us', '0' or '2s', got \"some\""],
    [['--rtt-jitter', '2ms'], '--rtt-jitter: must be from 0 to the round trip (1000 µs), got 2000 µs'],
  ])('%j: %s', (args, message) => {
    expect(() => parseSimulateFleet(args)).toThrow(message);
  });

  it('reads every flag', () => {
    const args = ['--instances', '3', '--rate', '900', '--algorithm', 'gcra', '--limit', '500', '--window', '2s'];
    const more = ['--burst', '700', '--lease', '10', '--growth', 'off', '--rtt', '250us', '--rtt-jitter', '100us'];
    const duration = ['--duration', '4s'];
    const rest = ['--arrivals', 'even', '--skew', '0.5', '--seed', '9', '--out', 'x.svg'];
    expect(parseSimulateFleet([...args, ...more, ...duration, ...rest])).toEqual({
      base: {
        ...{ instances: 3, ratePerSecond: 900, algorithm: 'fixed-window', limit: 500, windowMs: 2000, burst: 700 },
        ...{ lease: 10, growth: 'growing', rttUs: 250, rttJitterUs: 100, durationMs: 4000 },
        arrivals: 'even',
        ...{ skew: 0.5, seed: 9 },
      },
      algorithms: ['gcra'],
      growths: ['off'],
      out: 'x.svg',
    });
  });

  it('runs from the built command line: a table per second and a chart; exit code 2 naming a bad flag', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleet-'));
    try {
      const out = join(dir, 'fleet.svg');
      const flags = ['--instances', '5', '--rate', '5000', '--limit', '4000', '--growth', 'all', '--out', out];
      const run = spawnSync(process.execPath, [CLI, 'simulate-fleet', ...flags], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^second +offered +admitted +limit\/s +store calls +calls\/request/m);
      const bounds = /^bound: most \d+ per 1000 ms window \(limit 4000\); units the store counted [\d,]+$/gm;
      expect(run.stdout.match(bounds)).toHaveLength(2);
      expect(readFileSync(out, 'utf8')).toContain('<metadata id="fleet">');
      const bad = spawnSync(process.execPath, [CLI, 'simulate-fleet', '--rtt', '-1'], { encoding: 'utf8' });
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain("--rtt must be a duration like '1ms'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
