import type { FleetResult } from './run.js';

const pct = (fraction: number): string => `${(fraction * 100).toFixed(2)}%`;
const count = (n: number): string => Math.round(n).toLocaleString('en-US');

/** Store calls per request offered, and per request admitted. */
export const callsPerRequest = (r: FleetResult): number => (r.offered === 0 ? 0 : r.storeCalls / r.offered);

/** The limit's units per second (limit × 1000 / window), the rate the charts draw against. */
export const limitPerSecond = (r: FleetResult): number => (r.policy.limit * 1000) / r.policy.windowMs;

/** The lease mode of a run, as the tables name it: `lease off`, `lease growing 100`. */
export const modeOf = (r: FleetResult): string =>
  r.options.growth === 'off' ? 'lease off' : `lease ${r.options.growth} ${r.options.lease}`;

/**
 * Fixed window: the most any whole window admitted below what it could have, `min(offered, limit)` — units taken
 * by instances that did not spend them before the window ended, while others were refused.
 */
export function mostShort(r: FleetResult): number {
  if (r.policy.algorithm !== 'fixed-window') return 0;
  return Math.max(0, ...r.windows.map((w) => Math.min(w.offered, r.policy.limit) - w.admitted));
}

/**
 * A run as text: one row per simulated second (offered, admitted against the limit, store calls, calls per
 * request, the least, median and largest share of an instance), then the totals and the algorithm's bound.
 */
export function fleetTable(r: FleetResult): string {
  const { options: o, policy } = r;
  const head =
    `${policy.algorithm}, ${policy.limit} per ${policy.windowMs} ms, ${modeOf(r)}: ${o.instances} instances, ` +
    `${count(o.ratePerSecond)} requests/s (${o.arrivals}${o.skew > 0 ? `, skew ${o.skew}` : ''}), round trip ${o.rttUs} µs${o.rttJitterUs > 0 ? ` (± ${o.rttJitterUs / 2} µs each way)` : ''}, seed ${o.seed}`;
  const columns = [
    'second',
    'offered',
    'admitted',
    'limit/s',
    'store calls',
    'calls/request',
    'share min',
    'median',
    'max',
  ];
  const rows = r.seconds.map((s) => [
    `${s.startMs / 1000}`,
    count(s.offered),
    count(s.admitted),
    count((limitPerSecond(r) * (s.endMs - s.startMs)) / 1000),
    count(s.storeCalls),
    (s.offered === 0 ? 0 : s.storeCalls / s.offered).toFixed(4),
    pct(s.share.min),
    pct(s.share.median),
    pct(s.share.max),
  ]);
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  const short =
    policy.algorithm === 'fixed-window'
      ? `; most short of min(offered, limit) in a window: ${count(mostShort(r))} (instances × lease = ${count(o.instances * o.lease)})`
      : '';
  return [
    head,
    line(columns),
    ...rows.map(line),
    `total: offered ${count(r.offered)}, admitted ${count(r.admitted)}, store calls ${count(r.storeCalls)} ` +
      `(${callsPerRequest(r).toFixed(4)} per request)${short}`,
    `bound: ${r.bound.text}${r.bound.most <= r.bound.allowed + 1e-9 ? '' : '  EXCEEDED'}; ` +
      `units the store counted ${count(r.granted)}${r.overspent === 0 ? '' : `, OVERSPENT by instances: ${count(r.overspent)}`}`,
    '',
  ].join('\n');
}
