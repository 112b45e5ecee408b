import type { SimulationResult } from './run.js';
import { formatMs } from './traffic.js';

export const ADMITTED = '#2e7d32';
export const DENIED = '#c62828';
export const TRAILING = '#1565c0';

/** Text for XML content and attribute values. */
export function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const r2 = (n: number): number => Math.round(n * 100) / 100;

/** The smallest of 1, 2, 5 × 10^k that is at least `least`. */
export function niceStep(least: number): number {
  let step = 1;
  for (;;) {
    for (const m of [1, 2, 5]) if (step * m >= least) return step * m;
    step *= 10;
  }
}

/** A time step for axis labels: a whole number of ms, s or min that cuts `durationMs` into at most 10. */
function timeStep(durationMs: number): number {
  const least = durationMs / 10;
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000];
  return steps.find((ms) => ms >= least) ?? Math.ceil(least / 300_000) * 300_000;
}

/**
 * The trailing line's points within the duration; beyond 4 per pixel column, one per column holding the
 * column's peak, so that a long run still draws a small SVG and the peak it shows is the true one.
 */
function lineOf(points: SimulationResult['trailing'], durationMs: number, width: number): SimulationResult['trailing'] {
  const within = points.filter((p) => p.atMs <= durationMs);
  if (within.length <= 4 * width) return within;
  const columns = new Map<number, { atMs: number; units: number }>();
  for (const p of within) {
    const column = Math.floor((p.atMs / durationMs) * width);
    const seen = columns.get(column);
    if (seen === undefined || p.units > seen.units) columns.set(column, { atMs: seen?.atMs ?? p.atMs, units: p.units });
  }
  return [...columns.values()];
}

/** Where a panel is drawn, and the scales it shares with the other panels of its chart. */
export interface PanelFrame {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  /** Top of the left axis: requests per bucket. */
  readonly barsMax: number;
  /** Top of the right axis: units admitted in the last window. */
  readonly trailingMax: number;
}

/** The right axis's top: at least twice the limit, in steps of half the limit, so that 1× and 2× are ticks. */
export function trailingScale(results: readonly SimulationResult[]): number {
  const first = results[0];
  if (first === undefined) throw new Error('nest-rate-limit: trailingScale needs at least one result');
  const limit = first.policy.limit;
  const peak = Math.max(2 * limit, ...results.map((r) => r.busiestWindow.units));
  const half = Math.max(1, limit / 2);
  return Math.ceil(peak / half) * half;
}

/** The panel's frame with its scales: x from ms, y of the bars from requests, y of the line from units. */
interface Scales extends PanelFrame {
  readonly durationMs: number;
  readonly right: number;
  readonly sx: (t: number) => number;
  readonly sy: (n: number) => number;
  readonly sz: (units: number) => number;
}

/**
 * One panel: bars of requests admitted (green) and denied (red) per bucket on the left axis; the units admitted
 * in the last window (blue line) against the limit (blue dashes) on the right axis; window edges dashed grey.
 */
export function panel(r: SimulationResult, frame: PanelFrame, heading: string): string {
  const { x, y, width, height, barsMax, trailingMax } = frame;
  const d = r.traffic.durationMs;
  const scales: Scales = {
    ...frame,
    durationMs: d,
    right: x + width,
    sx: (t) => r2(x + (Math.min(t, d) / d) * width),
    sy: (n) => r2(y + height - (n / barsMax) * height),
    sz: (units) => r2(y + height - (units / trailingMax) * height),
  };
  return [
    `<g class="panel" data-algorithm="${r.policy.algorithm}" data-admitted="${r.admitted}" data-denied="${r.denied}" ` +
      `data-busiest-window-units="${r.busiestWindow.units}">`,
    `<text x="${x}" y="${y - 8}" font-size="13" fill="#222">${xml(heading)}</text>`,
    ...valueAxes(scales, r.policy.limit),
    ...windowEdges(scales, r.policy.windowMs),
    ...r.buckets.flatMap((b) => bucketBars(scales, b)),
    ...trailingLine(scales, r),
    ...timeAxis(scales),
    '</g>',
  ].join('\n');
}

/** The left axis's grid and labels (requests per bucket), and the right axis's labels (units, the limit named). */
function valueAxes({ x, right, barsMax, trailingMax, sy, sz }: Scales, limit: number): string[] {
  const out: string[] = [];
  const yStep = niceStep(barsMax / 4);
  for (let n = 0; n <= barsMax; n += yStep) {
    out.push(`<line x1="${x}" x2="${right}" y1="${sy(n)}" y2="${sy(n)}" stroke="#e8e8e8"/>`);
    out.push(`<text x="${x - 6}" y="${sy(n) + 4}" font-size="11" fill="#555" text-anchor="end">${n}</text>`);
  }
  for (let units = 0; units <= trailingMax; units += limit) {
    out.push(
      `<text x="${right + 6}" y="${sz(units) + 4}" font-size="11" fill="${TRAILING}">${units === limit ? `${units} limit` : units}</text>`,
    );
  }
  return out;
}

/** The edges of the windows, dashed grey. */
function windowEdges({ y, height, durationMs: d, sx }: Scales, windowMs: number): string[] {
  const out: string[] = [];
  // Past 200 windows the edges would fill the panel with grey; the bars and the line still tell the story.
  for (let edge = windowMs; edge < d && d / windowMs <= 200; edge += windowMs) {
    out.push(
      `<line class="window-edge" x1="${sx(edge)}" x2="${sx(edge)}" y1="${y}" y2="${y + height}" stroke="#777" stroke-dasharray="4 3"/>`,
    );
  }
  return out;
}

/** One bucket's bars: admitted (green) below denied (red), with a tooltip when it saw requests. */
function bucketBars({ sx, sy }: Scales, b: SimulationResult['buckets'][number]): string[] {
  const left = sx(b.startMs);
  const full = sx(b.endMs) - left;
  const barWidth = r2(Math.max(0.5, full > 3 ? full - 1 : full));
  const out = [
    `<g class="bucket" data-start-ms="${b.startMs}" data-end-ms="${b.endMs}" data-admitted="${b.admitted}" data-denied="${b.denied}">`,
  ];
  if (b.admitted + b.denied > 0) {
    out.push(
      `<title>${formatMs(b.startMs)} to ${formatMs(b.endMs)}: ${b.admitted} admitted, ${b.denied} denied</title>`,
    );
  }
  const top = sy(b.admitted);
  if (b.admitted > 0) {
    out.push(`<rect x="${left}" y="${top}" width="${barWidth}" height="${r2(sy(0) - top)}" fill="${ADMITTED}"/>`);
  }
  if (b.denied > 0) {
    const deniedTop = sy(b.admitted + b.denied);
    out.push(
      `<rect x="${left}" y="${deniedTop}" width="${barWidth}" height="${r2(top - deniedTop)}" fill="${DENIED}"/>`,
    );
  }
  out.push('</g>');
  return out;
}

/** The limit (blue dashes) and the units admitted in the last window (blue line). */
function trailingLine({ x, right, width, durationMs, sx, sz }: Scales, r: SimulationResult): string[] {
  const { limit } = r.policy;
  let path = `M${x} ${sz(0)}`;
  for (const p of lineOf(r.trailing, durationMs, width)) path += `H${sx(p.atMs)}V${sz(p.units)}`;
  return [
    `<line x1="${x}" x2="${right}" y1="${sz(limit)}" y2="${sz(limit)}" stroke="${TRAILING}" stroke-dasharray="2 3"/>`,
    `<path class="trailing" d="${path}H${right}" fill="none" stroke="${TRAILING}" stroke-width="1.5"/>`,
  ];
}

/** The baseline and the time axis's ticks and labels. */
function timeAxis({ x, right, durationMs: d, sx, sy }: Scales): string[] {
  const out = [`<line x1="${x}" x2="${right}" y1="${sy(0)}" y2="${sy(0)}" stroke="#333"/>`];
  const step = timeStep(d);
  for (let t = 0; t <= d; t += step) {
    out.push(
      `<line x1="${sx(t)}" x2="${sx(t)}" y1="${sy(0)}" y2="${sy(0) + 4}" stroke="#333"/>`,
      `<text x="${sx(t)}" y="${sy(0) + 16}" font-size="11" fill="#555" text-anchor="middle">${t === 0 ? '0' : formatMs(t)}</text>`,
    );
  }
  return out;
}
