import { jest } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  FLEET_ALGORITHMS,
  fleetSvg,
  LEASE_MODES,
  parseSimulateFleet,
  runFleet,
  type FleetChartData,
  type FleetResult,
} from '../src/fleet/index.js';

// The fleet simulation's output and its command line's flags (the fast tier). What the runs admit and call is
// checked in the slow tier: fleet-bounds, fleet-store-calls, fleet-under-admission and fleet-shares.spec.ts.

const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');

describe('fleet simulation: output', () => {
  const small = { instances: 8, ratePerSecond: 8000, limit: 5000, lease: 20, durationMs: 2000 };

  it('is the same for the same seed and differs for another', async () => {
    const strip = (r: FleetResult) => ({ ...r, options: undefined });
    expect(strip(await runFleet({ ...small, seed: 5 }))).toEqual(strip(await runFleet({ ...small, seed: 5 })));
    expect((await runFleet({ ...small, seed: 5 })).seconds).not.toEqual(
      (await runFleet({ ...small, seed: 6 })).seconds,
    );
  });

  // Regression: "a fleet simulation depends on the machine's speed". The engines' cache of denials judged its
  // trust in real time (performance.now), so a loaded machine (CI, 35 s for this file) dropped cached denials
  // that a quiet one kept, and the same seed granted 10,020 units where it had granted 10,060.
  it("is the same for the same seed however slowly the machine runs it (real time is not the simulation's)", async () => {
    const strip = (r: FleetResult) => ({ ...r, options: undefined });
    const quick = await runFleet({ ...small, seed: 5 });
    let realMs = 0;
    const slow = jest.spyOn(performance, 'now').mockImplementation(() => (realMs += 2000));
    try {
      expect(strip(await runFleet({ ...small, seed: 5 }))).toEqual(strip(quick));
    } finally {
      slow.mockRestore();
    }
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
    // Eight runs: a quarter of `small` each, so that the file stays seconds long on a loaded machine (CI ran
    // this case past Jest's 30 s beside the rest of npm test at full size).
    const tiny = { ...small, ratePerSecond: 4000, limit: 2500, durationMs: 1000 };
    const runs: FleetResult[] = [];
    for (const algorithm of FLEET_ALGORITHMS) {
      for (const growth of LEASE_MODES) runs.push(await runFleet({ ...tiny, algorithm, growth }));
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
