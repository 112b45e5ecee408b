import { ALGORITHM_STEPS } from '../../../lib/algorithms/index.js';
import type { Clock } from '../../../lib/util/clock.js';
import { elementAt } from '../../../lib/util/element-at.js';
import type { ResolvedPolicy } from '../../../lib/policy/policy.types.js';
import type { Arrival, Traffic } from './traffic.js';

/** What the policy decided for one arrival. */
export interface SimulatedDecision extends Arrival {
  readonly allowed: boolean;
}

/** The requests (not units) admitted and denied in one time bucket `[startMs, endMs)` after the start. */
export interface Bucket {
  readonly startMs: number;
  readonly endMs: number;
  readonly admitted: number;
  readonly denied: number;
}

/** A run of one policy over one traffic pattern. Times are ms after the start, which is a window edge. */
export interface SimulationResult {
  readonly policy: ResolvedPolicy;
  readonly traffic: Traffic;
  /** The fake clock's time at the start, a multiple of the window. */
  readonly startMs: number;
  readonly decisions: readonly SimulatedDecision[];
  readonly admitted: number;
  readonly denied: number;
  readonly admittedUnits: number;
  /** The most units admitted in any span of one window, `[fromMs, fromMs + windowMs)`: what the limit bounds. */
  readonly busiestWindow: { readonly fromMs: number; readonly units: number };
  readonly bucketMs: number;
  readonly buckets: readonly Bucket[];
  /**
   * Units admitted in the window-long span ending at each time, `(t − windowMs, t]`, as the points where it
   * changes: from `atMs` on it is `units`, until the next point. Its peak is `busiestWindow.units`.
   */
  readonly trailing: readonly { readonly atMs: number; readonly units: number }[];
}

/** A clock the simulation moves from arrival to arrival. */
export class SimulatedClock implements Clock {
  constructor(private nowMs: number) {}

  now(): number {
    return this.nowMs;
  }

  set(ms: number): void {
    this.nowMs = ms;
  }
}

/** 2023-11-14 (rounded up to a window edge): a realistic clock; the time of day plays no part. */
const EPOCH_MS = 1_700_000_000_000;

/** Bucket widths a chart reads easily, in ms. */
const NICE_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000];
const MAX_BUCKETS = 120;

/** The narrowest easily read bucket width that cuts `durationMs` into at most 120 buckets. */
export function bucketWidth(durationMs: number): number {
  const least = durationMs / MAX_BUCKETS;
  const nice = NICE_MS.find((ms) => ms >= least);
  if (nice !== undefined) return nice;
  return Math.ceil(least / 60_000) * 60_000;
}

/**
 * Runs the policy's real algorithm step (the TypeScript the memory store runs, twin of the Lua and SQL) on
 * every arrival in order, on a fake clock that starts at a window edge. A denied request consumes nothing, as
 * in the stores. Deterministic: the same policy and traffic always give the same result.
 * @example simulate(validatePolicy({ algorithm: 'gcra', limit: 100, window: '1m' }), buildPattern('steady', { limit: 100, windowMs: 60_000 })).denied === 0
 */
export function simulate(policy: ResolvedPolicy, traffic: Traffic): SimulationResult {
  const step = ALGORITHM_STEPS[policy.algorithm];
  const startMs = Math.ceil(EPOCH_MS / policy.windowMs) * policy.windowMs;
  const clock = new SimulatedClock(startMs);
  let state: unknown;
  const decisions = traffic.arrivals.map((arrival): SimulatedDecision => {
    clock.set(startMs + arrival.atMs);
    const result = step.step(state, policy, clock.now(), arrival.cost);
    if (result.allowed) state = result.state;
    return { ...arrival, allowed: result.allowed };
  });
  const bucketMs = bucketWidth(traffic.durationMs);
  const count = Math.ceil(traffic.durationMs / bucketMs);
  const buckets = Array.from({ length: count }, (_, i) => ({
    startMs: i * bucketMs,
    endMs: Math.min((i + 1) * bucketMs, traffic.durationMs),
    admitted: 0,
    denied: 0,
  }));
  for (const d of decisions) {
    // Every arrival is before the end of the traffic: in one of the buckets.
    const bucket = elementAt(buckets, Math.floor(d.atMs / bucketMs), 'the buckets of a simulation');
    if (d.allowed) bucket.admitted++;
    else bucket.denied++;
  }
  const allowed = decisions.filter((d) => d.allowed);
  return {
    policy,
    traffic,
    startMs,
    decisions,
    admitted: allowed.length,
    denied: decisions.length - allowed.length,
    admittedUnits: allowed.reduce((sum, d) => sum + d.cost, 0),
    busiestWindow: busiestWindow(allowed, policy.windowMs),
    bucketMs,
    buckets,
    trailing: trailingUnits(allowed, policy.windowMs),
  };
}

/** The step function of units admitted in the last window: each admission counts from its time for windowMs. */
function trailingUnits(admitted: readonly Arrival[], windowMs: number): { atMs: number; units: number }[] {
  const changes = new Map<number, number>();
  for (const a of admitted) {
    changes.set(a.atMs, (changes.get(a.atMs) ?? 0) + a.cost);
    changes.set(a.atMs + windowMs, (changes.get(a.atMs + windowMs) ?? 0) - a.cost);
  }
  let units = 0;
  return [...changes.keys()]
    .sort((a, b) => a - b)
    .map((atMs) => ({ atMs, units: (units += changes.get(atMs) as number) }));
}

/** The window-long span `[from, from + windowMs)` that holds the most admitted units (starting at an arrival). */
export function busiestWindow(
  admitted: readonly Arrival[],
  windowMs: number,
): { readonly fromMs: number; readonly units: number } {
  let best = { fromMs: 0, units: 0 };
  let end = 0;
  let units = 0;
  for (const from of admitted) {
    for (let next = admitted[end]; next !== undefined && next.atMs < from.atMs + windowMs; next = admitted[++end]) {
      units += next.cost;
    }
    if (units > best.units) best = { fromMs: from.atMs, units };
    units -= from.cost;
  }
  return best;
}
