import { niceStep, xml } from './panel.js';
import { formatMs } from './traffic.js';

/** A panel of a chart over a run's time: its top-left corner, its size, and the run's duration its x axis spans. */
export interface Frame {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly durationMs: number;
}

/** Two decimals: what an SVG coordinate needs. */
export const r2 = (n: number): number => Math.round(n * 100) / 100;

/** The x of `ms` into the run. */
export const sx = (f: Frame, ms: number): number => r2(f.x + (ms / f.durationMs) * f.width);

/**
 * The panel's heading, its horizontal grid lines at `ticks` (y, label), its time axis and about `timeTicks` labels
 * of time under it.
 */
export function timeAxes(f: Frame, ticks: readonly [number, string][], heading: string, timeTicks: number): string[] {
  const out = [`<text x="${f.x}" y="${f.y - 8}" font-size="12" fill="#222">${xml(heading)}</text>`];
  for (const [y, label] of ticks) {
    out.push(`<line x1="${f.x}" x2="${f.x + f.width}" y1="${y}" y2="${y}" stroke="#e8e8e8"/>`);
    out.push(`<text x="${f.x - 6}" y="${y + 4}" font-size="11" fill="#555" text-anchor="end">${label}</text>`);
  }
  const bottom = f.y + f.height;
  out.push(`<line x1="${f.x}" x2="${f.x + f.width}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`);
  const step = niceStep(f.durationMs / timeTicks);
  for (let t = 0; t <= f.durationMs; t += step) {
    out.push(
      `<text x="${sx(f, t)}" y="${bottom + 14}" font-size="11" fill="#555" text-anchor="middle">${t === 0 ? '0' : formatMs(t)}</text>`,
    );
  }
  return out;
}

/** The font every chart of the simulator is drawn in. */
export const CHART_FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

/** What a chart's opening shows: its size, its title and subtitle (drawn at `left`), and its numbers for programs. */
export interface ChartHead {
  readonly width: number;
  readonly height: number;
  readonly title: string;
  readonly sub: string;
  readonly left: number;
  /** The `id` of its `<metadata>`, which holds `data` as JSON. */
  readonly id: string;
  readonly data: unknown;
}

/** The opening of a time chart's SVG: the element, its title, description and metadata, background and headings. */
export function chartHead({ width, height, title, sub, left, id, data }: ChartHead): string[] {
  const json = JSON.stringify(data).replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${xml(title)}" ${CHART_FONT}>`,
    `<title>${xml(title)}</title>`,
    `<desc>${xml(sub)}</desc>`,
    `<metadata id="${id}">${json}</metadata>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="24" font-size="16" font-weight="600" fill="#111">${xml(title)}</text>`,
    `<text x="${left}" y="44" font-size="13" fill="#444">${xml(sub)}</text>`,
  ];
}
