import { elementAt } from '../../util/element-at.js';
import { type Algorithm, MAX_CHARGED_UNITS, type StepResult } from '../algorithm.js';

/** Entries `[timeMs, cost]` of the requests admitted in the last window, oldest first, one per millisecond. */
export type SlidingWindowLogState = readonly (readonly [timeMs: number, cost: number])[];

/**
 * Sliding window log: the units admitted in `(now − windowMs, now]` never exceed `limit`. Exact, at the price
 * of one entry per admitted request (at most `limit` of them, fewer when costs are larger or requests share a
 * millisecond). Best for small, security-critical limits such as login attempts. The key's time never goes
 * back: a request stamped by a clock behind the newest entry (another instance's clock is ahead, or this one
 * stepped back) is logged at that entry's time, so no entry is aged early and the log stays in order.
 */
export const slidingWindowLog: Algorithm<SlidingWindowLogState> = {
  step(state, policy, nowMs, cost): StepResult<SlidingWindowLogState> {
    const { limit, windowMs } = policy;
    const atMs = keyTime(state, nowMs);
    const live = alive(state, windowMs, atMs);
    let used = 0;
    for (const [, c] of live) used += c;
    if (cost <= limit && used + cost <= limit) {
      const next = cost > 0 ? append(live, atMs, cost) : live;
      return {
        state: next.length > 0 ? next : undefined,
        allowed: true,
        remaining: limit - used - cost,
        resetMs: resetOf(next, windowMs, nowMs),
        retryAfterMs: 0,
      };
    }
    let retryAfterMs = Infinity;
    if (cost <= limit) {
      // The oldest entries leave the window first: wait for the one that frees enough units.
      const need = used + cost - limit;
      let freed = 0;
      for (const [timeMs, c] of live) {
        freed += c;
        if (freed >= need) {
          retryAfterMs = timeMs + windowMs - nowMs;
          break;
        }
      }
    }
    return {
      state,
      allowed: false,
      remaining: Math.max(0, limit - used),
      resetMs: resetOf(live, windowMs, nowMs),
      retryAfterMs,
    };
  },

  refund(state, policy, nowMs, amount) {
    const entries = alive(state, policy.windowMs, keyTime(state, nowMs)).map(([t, c]) => [t, c] as [number, number]);
    let left = amount;
    // The newest units go back first: they are the ones that would otherwise weigh longest.
    for (let i = entries.length - 1; i >= 0 && left > 0; i--) {
      const entry = elementAt(entries, i, 'the live entries of a sliding log');
      const take = Math.min(entry[1], left);
      entry[1] -= take;
      left -= take;
    }
    const kept = entries.filter(([, c]) => c > 0);
    return kept.length > 0 ? kept : undefined;
  },

  /**
   * Logs an entry of `amount` at the key's time, past the limit: steps are denied until enough of the log has
   * left the window (the step's retryAfterMs waits for the entry that frees enough). The live units are
   * clamped at MAX_CHARGED_UNITS.
   */
  charge(state, policy, nowMs, amount) {
    const atMs = keyTime(state, nowMs);
    const live = alive(state, policy.windowMs, atMs);
    let used = 0;
    for (const [, c] of live) used += c;
    const added = Math.min(amount, Math.max(0, MAX_CHARGED_UNITS - used));
    const next = added > 0 ? append(live, atMs, added) : live;
    return next.length > 0 ? next : undefined;
  },
};

/** The key's time: now, or its newest entry's when that is later. */
export function keyTime(state: SlidingWindowLogState | undefined, nowMs: number): number {
  const newest = state?.at(-1)?.[0] ?? nowMs;
  return newest > nowMs ? newest : nowMs;
}

export function alive(
  state: SlidingWindowLogState | undefined,
  windowMs: number,
  nowMs: number,
): SlidingWindowLogState {
  if (state === undefined) return [];
  return state.filter(([timeMs]) => timeMs + windowMs > nowMs);
}

/** Appends an entry at `atMs`, the key's time (never before the last entry), or adds to one of that millisecond. */
function append(entries: SlidingWindowLogState, atMs: number, cost: number): SlidingWindowLogState {
  const last = entries.at(-1);
  if (last !== undefined && last[0] === atMs) return [...entries.slice(0, -1), [atMs, last[1] + cost]];
  return [...entries, [atMs, cost]];
}

function resetOf(entries: SlidingWindowLogState, windowMs: number, nowMs: number): number {
  const newest = entries.at(-1);
  return newest === undefined ? 0 : newest[0] + windowMs - nowMs;
}
