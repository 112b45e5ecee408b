import { niceStep, xml } from '../panel.js';
import { formatMs } from '../traffic.js';
import { sumOf, type ByCriticality, type Latency } from './counts.js';
import type { SheddingScenario, SheddingVariant } from './options.js';
import { labelOf } from './report.js';
import type { SheddingResult } from './run.js';

const WIDTH = 960;
const LEFT = 64;
const GAP = 88;
const PANEL_WIDTH = (WIDTH - LEFT - GAP - 40) / 2;
const HEIGHT = 140;
const PITCH = HEIGHT + 64;
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
/** Each variant's line: off grey, the library's LoadShedder blue, Vegas orange. */
const COLOURS: Readonly<Record<SheddingVariant, string>> = {
  off: '#777',
  gradient2: '#1565c0',
  vegas: '#ef6c00',
};

const r2 = (n: number): number => Math.round(n * 100) / 100;
const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The numbers of one run, as `<metadata id="shedding">` holds them (JSON, one entry per run). */
export interface SheddingChartData {
  readonly scenario: SheddingScenario;
  readonly variant: SheddingVariant;
  readonly vegasProbe: number;
  readonly capacity: number;
  readonly goodput: number;
  readonly offered: ByCriticality;
  readonly good: ByCriticality;
  readonly shed: ByCriticality;
  readonly late: number;
  readonly critical: Latency;
}

export function sheddingChartDataOf(r: SheddingResult): SheddingChartData {
  const { scenario, variant, vegasProbe } = r.options;
  return {
    ...{ scenario, variant, vegasProbe, capacity: r.capacity, goodput: Math.round(r.goodput * 10) / 10 },
    ...{ offered: r.offered, good: r.good, shed: r.shed, late: r.late, critical: r.critical },
  };
}

interface Frame {
  readonly x: number;
  readonly y: number;
  readonly durationMs: number;
}

const sx = (f: Frame, atMs: number) => r2(f.x + (atMs / f.durationMs) * PANEL_WIDTH);

function axes(f: Frame, ticks: readonly [number, string][], heading: string): string[] {
  const out = [`<text x="${f.x}" y="${f.y - 8}" font-size="12" fill="#222">${xml(heading)}</text>`];
  for (const [y, label] of ticks) {
    out.push(`<line x1="${f.x}" x2="${f.x + PANEL_WIDTH}" y1="${y}" y2="${y}" stroke="#e8e8e8"/>`);
    out.push(`<text x="${f.x - 6}" y="${y + 4}" font-size="11" fill="#555" text-anchor="end">${label}</text>`);
  }
  out.push(`<line x1="${f.x}" x2="${f.x + PANEL_WIDTH}" y1="${f.y + HEIGHT}" y2="${f.y + HEIGHT}" stroke="#333"/>`);
  const step = niceStep(f.durationMs / 6);
  for (let t = 0; t <= f.durationMs; t += step) {
    out.push(
      `<text x="${sx(f, t)}" y="${f.y + HEIGHT + 14}" font-size="11" fill="#555" text-anchor="middle">${t === 0 ? '0' : formatMs(t)}</text>`,
    );
  }
  return out;
}

/** A line through `points` ([ms, y]), broken where y is not a number. */
function path(f: Frame, points: readonly [number, number][], r: SheddingResult, cls: string): string {
  let d = '';
  let pen = false;
  for (const [atMs, y] of points) {
    if (!Number.isFinite(y)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${sx(f, atMs)} ${r2(y)}`;
    pen = true;
  }
  const colour = COLOURS[r.options.variant];
  return `<path class="${cls}" data-variant="${r.options.variant}" d="${d}" fill="none" stroke="${colour}" stroke-width="1.5"/>`;
}

function dashed(f: Frame, points: readonly [number, number][], title: string): string {
  const d = points.map(([atMs, y], i) => `${i === 0 ? 'M' : 'L'}${sx(f, atMs)} ${r2(y)}`).join('');
  return `<path d="${d}" fill="none" stroke="#222" stroke-dasharray="4 3"><title>${xml(title)}</title></path>`;
}

/** A log scale over [least, most] from the panel's bottom to its top. */
const logScale =
  (f: Frame, least: number, most: number) =>
  (v: number): number =>
    f.y + HEIGHT - (HEIGHT * Math.log10(Math.max(v, least) / least)) / Math.log10(most / least);

const decades = (least: number, most: number): number[] => {
  const out: number[] = [];
  for (let v = least; v <= most * 1.0001; v *= 10) out.push(v);
  return out;
};

/** One scenario's column: goodput per second, critical p99 per second, and the limit, for each variant. */
function column(runs: readonly SheddingResult[], x: number, top: number): string[] {
  const first = runs[0] as SheddingResult;
  const o = first.options;
  const durationMs = o.durationMs;
  const frames = [0, 1, 2].map((i): Frame => ({ x, y: top + i * PITCH, durationMs }));
  const [g, p, l] = frames as [Frame, Frame, Frame];
  const mid = (s: { startMs: number; endMs: number }) => (s.startMs + s.endMs) / 2;
  const out: string[] = [];

  // Goodput: responses within the timeout, per second, against the dependency's capacity.
  const slower = o.scenario === 'slower-deploy';
  const capacityAt = (atMs: number) =>
    slower && atMs >= durationMs / 2 ? (first.capacity * o.serviceMs) / o.slowerServiceMs : first.capacity;
  const peak = Math.max(first.capacity * 1.2, ...runs.flatMap((r) => r.slots.map((s) => sumOf(s.good))));
  const topG = niceStep(peak / 4) * 4;
  const yg = (perSecond: number) => g.y + HEIGHT - (perSecond / topG) * HEIGHT;
  const load = o.loadFrom === o.loadTo ? `${o.loadFrom}×` : `${o.loadFrom}× → ${o.loadTo}×`;
  out.push(
    ...axes(
      g,
      [0, 0.25, 0.5, 0.75, 1].map((q) => [r2(yg(q * topG)), count(q * topG)]),
      `${o.scenario} (${load} load): goodput per second (capacity dashed)`,
    ),
  );
  const capacityLine: [number, number][] = slower
    ? [
        [0, yg(capacityAt(0))],
        [durationMs / 2, yg(capacityAt(0))],
        [durationMs / 2, yg(capacityAt(durationMs))],
        [durationMs, yg(capacityAt(durationMs))],
      ]
    : [
        [0, yg(first.capacity)],
        [durationMs, yg(first.capacity)],
      ];
  out.push(dashed(g, capacityLine, 'the dependency’s capacity'));
  for (const r of runs) {
    out.push(
      path(
        g,
        r.slots.map((s) => [mid(s), yg((sumOf(s.good) * 1000) / (s.endMs - s.startMs))]),
        r,
        'goodput',
      ),
    );
  }

  // Critical p99, log scale, against the client's timeout.
  const most = Math.max(1000, ...runs.flatMap((r) => r.slots.map((s) => s.critical.p99)));
  const topP = 10 ** Math.ceil(Math.log10(most));
  const yp = logScale(p, 10, topP);
  const label = (v: number) => (v >= 1000 ? `${v / 1000} s` : `${v} ms`);
  out.push(
    ...axes(
      p,
      decades(10, topP).map((v) => [r2(yp(v)), label(v)]),
      `p99 latency of critical requests, by second sent (timeout ${formatMs(o.timeoutMs)} dashed)`,
    ),
  );
  out.push(
    dashed(
      p,
      [
        [0, yp(o.timeoutMs)],
        [durationMs, yp(o.timeoutMs)],
      ],
      'the client’s timeout',
    ),
  );
  for (const r of runs) {
    out.push(
      path(
        p,
        r.slots.map((s) => [mid(s), s.critical.count === 0 ? NaN : yp(s.critical.p99)]),
        r,
        'critical-p99',
      ),
    );
  }

  // The limit every tick, log scale, against the dependency's concurrency.
  const topL = 10 ** Math.ceil(Math.log10(Math.max(100, ...runs.flatMap((r) => r.ticks.map((t) => t.limit || 0)))));
  const yl = logScale(l, 1, topL);
  out.push(
    ...axes(
      l,
      decades(1, topL).map((v) => [r2(yl(v)), String(v)]),
      `the limit (off: none; the dependency’s ${o.concurrency} at once dashed)`,
    ),
  );
  out.push(
    dashed(
      l,
      [
        [0, yl(o.concurrency)],
        [durationMs, yl(o.concurrency)],
      ],
      'the dependency’s concurrency',
    ),
  );
  for (const r of runs) {
    if (r.options.variant === 'off') continue;
    out.push(
      path(
        l,
        r.ticks.map((t) => [t.atMs, yl(t.limit)]),
        r,
        'limit',
      ),
    );
  }
  return [`<g class="shedding-column" data-scenario="${o.scenario}">`, ...out, '</g>'];
}

function legend(x: number, y: number, runs: readonly SheddingResult[]): string {
  const seen = new Map<string, SheddingResult>();
  for (const r of runs) if (!seen.has(r.options.variant)) seen.set(r.options.variant, r);
  return [...seen.values()]
    .map((r, i) => {
      const at = x + i * 260;
      return (
        `<line x1="${at}" x2="${at + 20}" y1="${y - 4}" y2="${y - 4}" stroke="${COLOURS[r.options.variant]}" stroke-width="2"/>` +
        `<text x="${at + 24}" y="${y}" font-size="12" fill="#222">${xml(labelOf(r.options))}</text>`
      );
    })
    .join('\n');
}

/**
 * The SVG chart of shedding runs: one column per scenario (in the order of `runs`), each with three panels over
 * time comparing the variants: goodput per second against the dependency's capacity, the p99 latency of critical
 * requests against the client's timeout, and the limit; `<metadata id="shedding">` holds each run's totals
 * (SheddingChartData), and each column's `<g class="shedding-column">` carries `data-scenario`.
 * @example writeFileSync('shedding.svg', sheddingSvg(SHEDDING_VARIANTS.map((variant) => runShedding({ variant }))))
 */
export function sheddingSvg(runs: readonly SheddingResult[]): string {
  const first = runs[0];
  if (first === undefined) throw new Error('nest-rate-limit: sheddingSvg needs at least one run');
  const scenarios = [...new Set(runs.map((r) => r.options.scenario))];
  const o = first.options;
  const mix = `${o.mix.critical * 100}% critical, ${o.mix.default * 100}% default, ${o.mix.sheddable * 100}% sheddable`;
  const title = `Shedding load: one instance before a dependency of ${o.concurrency} at once, ${o.serviceMs} ms each`;
  const sub =
    `Poisson arrivals, ${mix}, service time ± ${Math.round(o.serviceJitter * 100)}%, clients wait ` +
    `${formatMs(o.timeoutMs)}, ${formatMs(o.durationMs)} simulated, seed ${o.seed}`;
  const top = 108;
  const height = top + 3 * PITCH - 20;
  const json = JSON.stringify(runs.map(sheddingChartDataOf)).replace(
    /[<>&]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${xml(title)}" ${FONT}>`,
    `<title>${xml(title)}</title>`,
    `<desc>${xml(sub)}</desc>`,
    `<metadata id="shedding">${json}</metadata>`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="${LEFT}" y="24" font-size="16" font-weight="600" fill="#111">${xml(title)}</text>`,
    `<text x="${LEFT}" y="44" font-size="13" fill="#444">${xml(sub)}</text>`,
    legend(LEFT, 72, runs),
    ...scenarios.flatMap((scenario, i) =>
      column(
        runs.filter((r) => r.options.scenario === scenario),
        LEFT + i * (PANEL_WIDTH + GAP),
        top,
      ),
    ),
    '</svg>',
    '',
  ].join('\n');
}
