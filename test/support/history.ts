import { emissionUs } from '../../lib/policy/emission.js';
import type { ResolvedPolicy } from '../../lib/policy/policy.types.js';

// The history checker: every admission of a fleet, with the time it was made known only to lie between `from`
// (the request was sent) and `to` (its answer came back), checked against what the policy's algorithm allows
// over every window. Only admissions surely inside a window count against it, so a report is never a
// placement artefact: a violation is a fleet that admitted more than the algorithm allows.

/** One admitted request (or, for a concurrency limit, one handler run: `from` it began, `to` it ended). */
export interface Admission {
  readonly from: number;
  readonly to: number;
  readonly cost: number;
}

/** Spans of time (ms) during which the store may have lost what it counted (a failover): windows across them are not checked. */
export type Exempt = readonly (readonly [number, number])[];

const overlaps = (a: number, b: number, exempt: Exempt) => exempt.some(([s, e]) => a <= e && s <= b);

/** The units of `admitted` surely inside [a, b]. */
function within(admitted: readonly Admission[], a: number, b: number): number {
  let units = 0;
  for (const x of admitted) if (x.from >= a && x.to <= b) units += x.cost;
  return units;
}

/** Windows [k·w, (k+1)·w) (a quota: its whole history, one period): no more than `limit` units in each. */
function perWindow(admitted: readonly Admission[], w: number, limit: number, exempt: Exempt): string[] {
  const starts = new Set(admitted.map((x) => Math.floor(x.from / w) * w));
  const found: string[] = [];
  for (const start of starts) {
    if (overlaps(start, start + w - 1, exempt)) continue;
    const units = within(admitted, start, start + w - 1);
    if (units > limit) found.push(`window [${start}, ${start + w}) admitted ${units} > ${limit}`);
  }
  return found;
}

/** Every span of length w that begins at an admission: no more than `limit` units (the sliding log's bound). */
function perSlidingWindow(admitted: readonly Admission[], w: number, limit: number, exempt: Exempt): string[] {
  const found: string[] = [];
  for (const from of new Set(admitted.map((x) => x.from))) {
    if (overlaps(from, from + w - 1, exempt)) continue;
    const units = within(admitted, from, from + w - 1);
    if (units > limit) found.push(`[${from}, ${from + w}) admitted ${units} > ${limit}`);
  }
  return found;
}

/**
 * What a bucket's key may owe at a moment, in units (a charge past the limit, RateLimitStore.charge): the
 * admissions up to then may have taken that much more than the bucket held.
 */
export type Owed = (ms: number) => number;

/**
 * Over every [a, b] from one admission's start to another's end: at most capacity + the refill over b − a
 * (+ what the key owes at b: an overrun charged by a settlement is a debt the bucket makes later requests wait
 * out, DEBT_CAP_CAPACITIES capacities at most).
 */
function perInterval(
  admitted: readonly Admission[],
  capacity: number,
  msPerUnit: number,
  exempt: Exempt,
  owed: Owed,
): string[] {
  const byEnd = [...admitted].sort((x, y) => x.to - y.to);
  const found = new Set<string>();
  for (const { from: a } of admitted) {
    let units = 0;
    for (const x of byEnd) {
      if (x.from < a) continue;
      units += x.cost;
      const b = x.to;
      if (overlaps(a, b, exempt)) continue;
      const most = capacity + (b - a) / msPerUnit + owed(b);
      if (units > most) {
        found.add(`[${a}, ${b}] admitted ${units} > ${most.toFixed(2)}`);
        break;
      }
    }
  }
  return [...found];
}

/** The most handler runs of a concurrency limit surely in flight at once: never more than the limit. */
function inFlight(runs: readonly Admission[], limit: number, exempt: Exempt): string[] {
  // a run is surely in flight over [from, to]: count, at each start, the runs that began before and end after
  const found: string[] = [];
  for (const from of new Set(runs.map((x) => x.from))) {
    if (overlaps(from, from, exempt)) continue;
    let units = 0;
    for (const x of runs) if (x.from <= from && x.to >= from) units += x.cost;
    if (units > limit) found.push(`${units} units in flight at ${from} > ${limit}`);
  }
  return found;
}

/**
 * What the admissions of `policy` break: each line a window (or interval, or moment) where the fleet admitted
 * more than the algorithm allows; empty when none. A sliding window counter is held to its per-window bound
 * (its estimate is at least the current window's count); a quota's history is taken to lie in one period.
 * A settled request is one admission from its reservation to its settlement, at its actual cost; `owed` says
 * what a bucket's key owes at a time (nothing unless said).
 */
export function violations(
  policy: ResolvedPolicy,
  admitted: readonly Admission[],
  exempt: Exempt = [],
  owed: Owed = () => 0,
): string[] {
  const { algorithm, limit, windowMs: w, capacity } = policy;
  switch (algorithm) {
    case 'fixed-window':
    case 'sliding-window-counter':
      return perWindow(admitted, w, limit, exempt);
    case 'quota':
      return perWindow(admitted, Number.MAX_SAFE_INTEGER, limit, exempt);
    case 'sliding-window-log':
      return perSlidingWindow(admitted, w, limit, exempt);
    case 'token-bucket':
      return perInterval(admitted, capacity, w / limit, exempt, owed);
    case 'gcra':
      return perInterval(admitted, capacity, emissionUs(limit, w) / 1000, exempt, owed);
    case 'concurrency':
      return inFlight(admitted, limit, exempt);
  }
}
