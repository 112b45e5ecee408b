import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SHEDDING_DEFAULTS } from '../../../lib/shedding/shedding-options.js';

import {
  parseSimulateShedding,
  runShedding,
  sheddingSvg,
  SHEDDING_VARIANTS,
  type SheddingChartData,
  type SheddingResult,
  type SheddingScenario,
  type SheddingVariant,
} from '../src/shedding/index.js';

// The shedding simulation (docs/shedding-load.md): one instance before a dependency of 10 at once for 20 ms each
// (500 a second), clients that wait 1 s, 20% critical, 50% default and 30% sheddable requests, seed 1, the
// `shedding` defaults (maxLimit 200). Each run is a fraction of a second; the six of the docs' chart take about
// 1 s in all.

const CLI = join(process.cwd(), 'packages', 'simulator', 'bin', 'simulate.mjs');

const runs = new Map<string, SheddingResult>();
/** The run of the docs' chart for a scenario and variant, made once for the file. */
function runOf(scenario: SheddingScenario, variant: SheddingVariant): SheddingResult {
  const key = `${scenario}/${variant}`;
  const run = runs.get(key) ?? runShedding({ scenario, variant });
  runs.set(key, run);
  return run;
}

/** The slots of a run from `fromS` on (whole seconds). */
const from = (r: SheddingResult, fromS: number) => r.slots.filter((s) => s.startMs >= fromS * 1000);
const perSecond = (slots: SheddingResult['slots'], f: (s: SheddingResult['slots'][number]) => number) =>
  slots.reduce((n, s) => n + f(s), 0) / slots.length;
const goodOf = (s: SheddingResult['slots'][number]) => s.good.critical + s.good.default + s.good.sheddable;

describe('shedding simulation: the rising load (0.5x to 4x the capacity over 60 s)', () => {
  it('is the same for the same seed, differs for another, and offers every variant the same requests', () => {
    const strip = (r: SheddingResult) => ({ ...r, options: undefined });
    expect(strip(runShedding({ variant: 'vegas', seed: 5 }))).toEqual(
      strip(runShedding({ variant: 'vegas', seed: 5 })),
    );
    expect(runShedding({ variant: 'vegas', seed: 6 }).offered).not.toEqual(runShedding({ seed: 5 }).offered);
    const offered = SHEDDING_VARIANTS.map((variant) => runOf('rising-load', variant).offered);
    expect(new Set(offered.map((o) => JSON.stringify(o))).size).toBe(1);
    expect(offered[0]).toEqual({ critical: 13_490, default: 33_741, sheddable: 20_461 });
  });

  it('without shedding: goodput falls to nothing and critical p99 passes the client timeout at 4x', () => {
    const r = runOf('rising-load', 'off');
    const last = from(r, 50);
    expect(perSecond(last, goodOf)).toBe(0);
    for (const s of last) expect(s.critical.p99).toBeGreaterThan(r.options.timeoutMs);
    expect(r.good).toEqual({ critical: 1_319, default: 3_330, sheddable: 2_013 });
    expect(r.critical.p99).toBeGreaterThan(60_000);
    expect(r.late).toBe(61_030);
  });

  it('the library LoadShedder: the capacity served and critical p99 below the client timeout at 4x', () => {
    const r = runOf('rising-load', 'gradient2');
    const last = from(r, 50);
    expect(perSecond(last, goodOf)).toBeGreaterThan(0.95 * r.capacity);
    // critical requests (about 370 a second by then) keep all but a few percent of what they offer
    expect(perSecond(last, (s) => s.good.critical)).toBeGreaterThan(0.95 * perSecond(last, (s) => s.offered.critical));
    for (const s of last) expect(s.critical.p99).toBeLessThan(r.options.timeoutMs / 10);
    expect(r.late).toBe(0);
    expect(r.shed).toEqual({ critical: 96, default: 19_935, sheddable: 18_660 });
  });

  // Fed a sample per request, Gradient2's long-term latency (600 samples) followed the queue up within a second and
  // the limit ran to maxLimit: one mean latency a window keeps it near the dependency's knee.
  it('the library LoadShedder: its limit stays near the knee, far below maxLimit', () => {
    const r = runOf('rising-load', 'gradient2');
    expect(Math.max(...r.ticks.map((t) => t.limit))).toBeLessThanOrEqual(30);
    expect(r.options.shedding.maxLimit).toBe(200);
  });

  it('Vegas: critical p99 below the timeout, but a fifth of the capacity unused and critical requests shed', () => {
    const r = runOf('rising-load', 'vegas');
    const last = from(r, 50);
    for (const s of last) expect(s.critical.p99).toBeLessThan(r.options.timeoutMs / 10);
    // the least of jittered service times (10 to 30 ms) as its no-load latency: it sees a queue that is not there
    expect(perSecond(last, goodOf)).toBeLessThan(0.9 * r.capacity);
    expect(r.goodput).toBeCloseTo(384.6, 1);
    expect(r.shed).toEqual({ critical: 2_144, default: 23_889, sheddable: 18_583 });
  });
});

describe('shedding simulation: a slower deploy (service time 20 ms, then 40 ms, at a steady 1.5x)', () => {
  it('the library LoadShedder follows the new capacity (250 a second)', () => {
    const r = runOf('slower-deploy', 'gradient2');
    const after = from(r, 35);
    expect(perSecond(after, goodOf)).toBeGreaterThan(0.95 * 250);
    for (const s of after) expect(s.critical.p99).toBeLessThan(r.options.timeoutMs / 5);
  });

  it("Vegas keeps the old no-load latency: its limit falls below the dependency's concurrency, 40% unused", () => {
    const r = runOf('slower-deploy', 'vegas');
    const after = from(r, 35);
    expect(Math.max(...r.ticks.filter((t) => t.atMs > 35_000).map((t) => t.limit))).toBeLessThan(r.options.concurrency);
    expect(perSecond(after, goodOf)).toBeLessThan(0.65 * 250);
    // Netflix's current VegasLimit probes for a new no-load latency now and then: it gets part of it back
    const probing = runShedding({ scenario: 'slower-deploy', variant: 'vegas', vegasProbe: 30 });
    expect(perSecond(from(probing, 35), goodOf)).toBeGreaterThan(perSecond(after, goodOf) + 40);
  });

  it('without shedding the queue grows from the start: no goodput after the first seconds', () => {
    const r = runOf('slower-deploy', 'off');
    expect(perSecond(from(r, 5), goodOf)).toBe(0);
    expect(r.goodput).toBeCloseTo(23.3, 1);
  });
});

describe('shedding simulation: an overload that lasts (a steady 2x for 2 minutes)', () => {
  // Gradient2's long-term latency follows a lasting queue up, slowly (600 windows), and the limit with it;
  // maxLimit is the backstop (docs/shedding-load.md). 240,000 requests: about 0.3 s.
  it('the limit creeps up to maxLimit and stays there; in flight and latency then stay where maxLimit puts them', () => {
    const shedding = { ...SHEDDING_DEFAULTS, maxLimit: 40 };
    const r = runShedding({ variant: 'gradient2', loadFrom: 2, loadTo: 2, durationMs: 120_000, shedding });
    expect(r.ticks.find((t) => t.limit === 40)?.atMs).toBe(45_100);
    // a slow window now and then takes it down by one, the next gives it back
    expect(Math.min(...r.ticks.filter((t) => t.atMs > 45_100).map((t) => t.limit))).toBe(39);
    const last = from(r, 90);
    // default requests fill up to their ceiling, 40 x 0.8 = 32 in flight: 32 / 500 a second = 64 ms
    expect(perSecond(last, (s) => s.inFlight)).toBeLessThan(32);
    for (const s of last) expect(s.critical.p99).toBeLessThan(100);
    expect(perSecond(last, goodOf)).toBeGreaterThan(0.95 * r.capacity);
    expect(r.late).toBe(0);
  });
});

describe('shedding simulation: chart and command line', () => {
  it('charts each scenario with its variants, the totals in <metadata>', () => {
    const all = (['rising-load', 'slower-deploy'] as const).flatMap((scenario) =>
      SHEDDING_VARIANTS.map((variant) => runOf(scenario, variant)),
    );
    const svg = sheddingSvg(all);
    expect(svg.match(/<g class="shedding-column" data-scenario="[^"]+"/g)).toHaveLength(2);
    expect(svg.match(/<path class="goodput" data-variant="/g)).toHaveLength(6);
    // off has no limit to draw
    expect(svg.match(/<path class="limit" data-variant="/g)).toHaveLength(4);
    const data = JSON.parse(
      /<metadata id="shedding">(.*)<\/metadata>/s.exec(svg)?.[1] ?? 'null',
    ) as SheddingChartData[];
    expect(data.map((d) => [d.scenario, d.variant, d.shed])).toEqual(
      all.map((r) => [r.options.scenario, r.options.variant, r.shed]),
    );
    // The docs page's chart is this run's (`npm run charts:shedding` draws it again after a change).
    const committed = readFileSync(new URL('../../../docs/public/shedding/shedding-simulation.svg', import.meta.url));
    expect(svg === committed.toString('utf8')).toBe(true);
  });

  it.each([
    [['--scenario', 'crash'], '--scenario must be one of rising-load, slower-deploy or all, got "crash"'],
    [['--variant', 'aimd'], '--variant must be one of off, gradient2, vegas or all, got "aimd"'],
    [['--mix', '20,50'], '--mix must be three percentages (critical,default,sheddable) that add up to 100'],
    [['--jitter', '1.5'], '--jitter: must be a fraction from 0 to below 1, got 1.5'],
    [['--load-to', 'lots'], '--load-to must be a number, got "lots"'],
    [['--vegas-probe', '-1'], '--vegas-probe must be an integer >= 0 (0: never), got "-1"'],
    [['--duration', '2h'], '--duration: must be from 1s to 1h, got 7200000 ms'],
    [['--out', 'chart.png'], '--out must name an .svg file, got "chart.png"'],
    [['--sead', '2'], 'unknown flag --sead (did you mean --seed?)'],
  ])('%j: %s', (args, message) => {
    expect(() => parseSimulateShedding(args)).toThrow(message);
  });

  it('reads every flag, each scenario keeping its own load unless one is given', () => {
    const parsed = parseSimulateShedding(['--variant', 'vegas', '--concurrency', '20', '--service', '10ms']);
    expect(parsed).not.toBe('help');
    const { runs: asked } = parsed as Exclude<typeof parsed, 'help'>;
    expect(asked.map((o) => [o.scenario, o.variant, o.concurrency, o.serviceMs, o.loadFrom, o.loadTo])).toEqual([
      ['rising-load', 'vegas', 20, 10, 0.5, 4],
      ['slower-deploy', 'vegas', 20, 10, 1.5, 1.5],
    ]);
    const more = [
      '--slower-service',
      '80ms',
      '--jitter',
      '0',
      '--load-from',
      '1',
      '--load-to',
      '2',
      '--mix',
      '10,60,30',
    ];
    const rest = ['--timeout', '2s', '--duration', '30s', '--vegas-probe', '30', '--seed', '7', '--out', 'x.svg'];
    const all = parseSimulateShedding(['--scenario', 'slower-deploy', '--variant', 'off', ...more, ...rest]);
    expect(all).toEqual({
      runs: [
        expect.objectContaining({
          ...{ scenario: 'slower-deploy', variant: 'off', slowerServiceMs: 80, serviceJitter: 0, loadFrom: 1 },
          ...{ loadTo: 2, mix: { critical: 0.1, default: 0.6, sheddable: 0.3 }, timeoutMs: 2000 },
          ...{ durationMs: 30_000, vegasProbe: 30, seed: 7 },
        }),
      ],
      out: 'x.svg',
    });
  });

  it('runs from the built command line: a table per run, a summary and a chart; exit code 2 naming a bad flag', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shedding-'));
    try {
      const out = join(dir, 'shedding.svg');
      const flags = ['--scenario', 'rising-load', '--duration', '10s', '--out', out];
      const run = spawnSync(process.execPath, [CLI, 'simulate-shedding', ...flags], { encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(run.stdout.match(/^from s +offered\/s +goodput\/s +critical +shed crit/gm)).toHaveLength(3);
      expect(run.stdout).toMatch(/^scenario +variant +goodput\/s +crit p50 +crit p99/m);
      expect(readFileSync(out, 'utf8')).toContain('<metadata id="shedding">');
      const bad = spawnSync(process.execPath, [CLI, 'simulate-shedding', '--variant', 'aimd'], { encoding: 'utf8' });
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('simulate-shedding: --variant must be one of');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
