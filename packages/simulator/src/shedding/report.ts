import { CRITICALITIES } from '../../../../lib/policy/criticality.js';
import { formatMs } from '../traffic.js';
import { sumOf, type ByCriticality, type SheddingSlot } from './counts.js';
import type { SheddingSimOptions, SheddingVariant } from './options.js';
import type { SheddingResult } from './run.js';

/** How each variant is named in tables and on the chart. */
export const VARIANT_LABELS: Readonly<Record<SheddingVariant, string>> = {
  off: 'off',
  gradient2: 'LoadShedder (Gradient2, windowed)',
  vegas: 'Vegas',
};

const count = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number): string => (n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`);
const limitText = (n: number): string => (Number.isNaN(n) ? '-' : String(Math.round(n)));

/** A run's variant as tables name it: `vegas` with its probe, when it has one. */
export function labelOf(o: SheddingSimOptions): string {
  const label = VARIANT_LABELS[o.variant];
  return o.variant === 'vegas' && o.vegasProbe > 0 ? `${label} (probe ${o.vegasProbe})` : label;
}

/** The scenario in words: the load, the dependency, and the change of service time if any. */
export function describeScenario(r: SheddingResult): string {
  const o = r.options;
  const load = o.loadFrom === o.loadTo ? `${o.loadFrom}×` : `${o.loadFrom}× to ${o.loadTo}×`;
  const service =
    o.scenario === 'slower-deploy'
      ? `${o.serviceMs} ms, then ${o.slowerServiceMs} ms from ${formatMs(o.durationMs / 2)}`
      : `${o.serviceMs} ms`;
  return (
    `${o.scenario}: ${load} the capacity (${count(r.capacity)}/s) offered, a dependency of ${o.concurrency} at once ` +
    `for ${service} each (± ${Math.round(o.serviceJitter * 100)}%), clients wait ${formatMs(o.timeoutMs)}, ` +
    `${formatMs(o.durationMs)} simulated, seed ${o.seed}`
  );
}

/** The per-slot counts summed over `slots`, per second. */
function rowOf(slots: readonly SheddingSlot[]): string[] {
  const seconds = slots.reduce((n, s) => n + (s.endMs - s.startMs), 0) / 1000;
  const add = (f: (s: SheddingSlot) => number) => slots.reduce((n, s) => n + f(s), 0);
  const per = (f: (s: SheddingSlot) => number) => count(add(f) / seconds);
  const critical = slots.flatMap((s) => (s.critical.count === 0 ? [] : [s.critical]));
  const worst = (f: (l: SheddingSlot['critical']) => number) => Math.max(0, ...critical.map(f));
  const mean = (f: (s: SheddingSlot) => number) => add(f) / slots.length;
  return [
    `${(slots[0]?.startMs ?? 0) / 1000}`,
    per((s) => sumOf(s.offered)),
    per((s) => sumOf(s.good)),
    per((s) => s.good.critical),
    ...CRITICALITIES.map((c) => per((s) => s.shed[c])),
    ms(worst((l) => l.p50)),
    ms(worst((l) => l.p99)),
    limitText(mean((s) => s.limit)),
    count(mean((s) => s.inFlight)),
  ];
}

const byText = (counts: ByCriticality): string => CRITICALITIES.map((c) => `${c} ${count(counts[c])}`).join(', ');

/**
 * A run as text: one row per `everyMs` (offered, goodput and critical goodput per second, refusals per second by
 * criticality, the worst second's critical p50 and p99, the mean limit and requests in flight), then the totals.
 */
export function sheddingTable(r: SheddingResult, everyMs = 5000): string {
  const columns = ['from s', 'offered/s', 'goodput/s', 'critical', 'shed crit', 'dflt', 'shdb'];
  columns.push('crit p50', 'crit p99', 'limit', 'in flight');
  const per = Math.max(1, Math.round(everyMs / r.slotMs));
  const rows: string[][] = [];
  for (let i = 0; i < r.slots.length; i += per) rows.push(rowOf(r.slots.slice(i, i + per)));
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [
    `${labelOf(r.options)}, ${describeScenario(r)}`,
    line(columns),
    ...rows.map(line),
    `total: goodput ${r.goodput.toFixed(1)}/s (${byText(r.good)}); critical p50 ${ms(r.critical.p50)}, ` +
      `p99 ${ms(r.critical.p99)}; shed ${byText(r.shed)}; responses after the client left ${count(r.late)}`,
    '',
  ].join('\n');
}

/** The runs side by side, one row each: goodput, critical latency, refusals by criticality. */
export function sheddingSummary(runs: readonly SheddingResult[]): string {
  const columns = ['scenario', 'variant', 'goodput/s', 'crit p50', 'crit p99', 'shed crit', 'dflt', 'shdb'];
  const rows = runs.map((r) => [
    r.options.scenario,
    labelOf(r.options),
    r.goodput.toFixed(1),
    ms(r.critical.p50),
    ms(r.critical.p99),
    ...CRITICALITIES.map((c) => count(r.shed[c])),
  ]);
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(columns), ...rows.map(line), ''].join('\n');
}
