import { type Frame, r2, sx, timeAxes } from '../time-frame.js';
import { niceStep, xml } from '../panel.js';
import { formatMs } from '../traffic.js';
import { sumOf } from './counts.js';
import type { SheddingVariant } from './options.js';
import type { SheddingResult } from './run.js';

export const WIDTH = 960;
export const LEFT = 64;
export const GAP = 88;
export const PANEL_WIDTH = (WIDTH - LEFT - GAP - 40) / 2;
const HEIGHT = 140;
export const PITCH = HEIGHT + 64;
/** Each variant's line: off grey, the library's LoadShedder blue, Vegas orange. */
export const COLOURS: Readonly<Record<SheddingVariant, string>> = {
  off: '#777',
  gradient2: '#1565c0',
  vegas: '#ef6c00',
};

const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The time axes of this chart's panels: about 6 labels of time. */
const axes = (f: Frame, ticks: readonly [number, string][], heading: string): string[] =>
  timeAxes(f, ticks, heading, 6);

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

/** The middle of a slot, where its point is drawn. */
const mid = (s: { startMs: number; endMs: number }) => (s.startMs + s.endMs) / 2;

/** Goodput: responses within the timeout, per second, against the dependency's capacity. */
function goodputPanel(runs: readonly SheddingResult[], g: Frame): string[] {
  const first = runs[0] as SheddingResult;
  const o = first.options;
  const durationMs = o.durationMs;
  const slower = o.scenario === 'slower-deploy';
  const capacityAt = (atMs: number) =>
    slower && atMs >= durationMs / 2 ? (first.capacity * o.serviceMs) / o.slowerServiceMs : first.capacity;
  const peak = Math.max(first.capacity * 1.2, ...runs.flatMap((r) => r.slots.map((s) => sumOf(s.good))));
  const topG = niceStep(peak / 4) * 4;
  const yg = (perSecond: number) => g.y + HEIGHT - (perSecond / topG) * HEIGHT;
  const load = o.loadFrom === o.loadTo ? `${o.loadFrom}×` : `${o.loadFrom}× → ${o.loadTo}×`;
  const out = axes(
    g,
    [0, 0.25, 0.5, 0.75, 1].map((q) => [r2(yg(q * topG)), count(q * topG)]),
    `${o.scenario} (${load} load): goodput per second (capacity dashed)`,
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
  return out;
}

/** Critical p99, log scale, against the client's timeout. */
function criticalP99Panel(runs: readonly SheddingResult[], p: Frame): string[] {
  const o = (runs[0] as SheddingResult).options;
  const most = Math.max(1000, ...runs.flatMap((r) => r.slots.map((s) => s.critical.p99)));
  const topP = 10 ** Math.ceil(Math.log10(most));
  const yp = logScale(p, 10, topP);
  const label = (v: number) => (v >= 1000 ? `${v / 1000} s` : `${v} ms`);
  const out = axes(
    p,
    decades(10, topP).map((v) => [r2(yp(v)), label(v)]),
    `p99 latency of critical requests, by second sent (timeout ${formatMs(o.timeoutMs)} dashed)`,
  );
  out.push(
    dashed(
      p,
      [
        [0, yp(o.timeoutMs)],
        [o.durationMs, yp(o.timeoutMs)],
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
  return out;
}

/** The limit every tick, log scale, against the dependency's concurrency. */
function limitPanel(runs: readonly SheddingResult[], l: Frame): string[] {
  const o = (runs[0] as SheddingResult).options;
  const topL = 10 ** Math.ceil(Math.log10(Math.max(100, ...runs.flatMap((r) => r.ticks.map((t) => t.limit || 0)))));
  const yl = logScale(l, 1, topL);
  const out = axes(
    l,
    decades(1, topL).map((v) => [r2(yl(v)), String(v)]),
    `the limit (off: none; the dependency’s ${o.concurrency} at once dashed)`,
  );
  out.push(
    dashed(
      l,
      [
        [0, yl(o.concurrency)],
        [o.durationMs, yl(o.concurrency)],
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
  return out;
}

/**
 * One scenario's column of the shedding chart, its left edge at `x` and its first panel's top at `top`: goodput
 * per second, critical p99 per second, and the limit, one line per variant in each.
 * @example column(runs.filter((r) => r.options.scenario === 'rising-load'), LEFT, 108).join('\n')
 */
export function column(runs: readonly SheddingResult[], x: number, top: number): string[] {
  const { scenario, durationMs } = (runs[0] as SheddingResult).options;
  const [g, p, l] = [0, 1, 2].map((i): Frame => ({
    x,
    y: top + i * PITCH,
    width: PANEL_WIDTH,
    height: HEIGHT,
    durationMs,
  })) as [Frame, Frame, Frame];
  return [
    `<g class="shedding-column" data-scenario="${scenario}">`,
    ...goodputPanel(runs, g),
    ...criticalP99Panel(runs, p),
    ...limitPanel(runs, l),
    '</g>',
  ];
}
