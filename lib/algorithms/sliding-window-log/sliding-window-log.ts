import { type Algorithm, type StepResult } from '../algorithm.js';

/** Entries `[timeMs, cost]` of the requests admitted in the last window, oldest first, one per millisecond. */
export type SlidingWindowLogState = readonly (readonly [timeMs: number, cost: number])[];

/**
 * Sliding window log: the units admitted in `(now − windowMs, now]` never exceed `limit`. Exact, at the price
 * of one entry per admitted request (at most `limit` of them, fewer when costs are larger or requests share a
 * millisecond). Best for small, security-critical limits such as login attempts.
 */
export const slidingWindowLog: Algorithm<SlidingWindowLogState> = {
  step(state, policy, nowMs, cost): StepResult<SlidingWindowLogState> {
    const { limit, windowMs } = policy;
    const live = alive(state, windowMs, nowMs);
    let used = 0;
    for (const [, c] of live) used += c;
    if (cost <= limit && used + cost <= limit) {
      const next = cost > 0 ? insert(live, nowMs, cost) : live;
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
    const entries = alive(state, policy.windowMs, nowMs).map(([t, c]) => [t, c] as [number, number]);
    let left = amount;
    // The newest units go back first: they are the ones that would otherwise weigh longest.
    for (let i = entries.length - 1; i >= 0 && left > 0; i--) {
      const take = Math.min(entries[i][1], left);
      entries[i][1] -= take;
      left -= take;
    }
    const kept = entries.filter(([, c]) => c > 0);
    return kept.length > 0 ? kept : undefined;
  },
};

function alive(state: SlidingWindowLogState | undefined, windowMs: number, nowMs: number): SlidingWindowLogState {
  if (state === undefined) return [];
  return state.filter(([timeMs]) => timeMs + windowMs > nowMs);
}

/** Inserts in time order (a clock may step back), adding to an entry of the same millisecond. */
function insert(entries: SlidingWindowLogState, nowMs: number, cost: number): SlidingWindowLogState {
  let at = entries.length;
  while (at > 0 && entries[at - 1][0] > nowMs) at--;
  if (at > 0 && entries[at - 1][0] === nowMs) {
    return [...entries.slice(0, at - 1), [nowMs, entries[at - 1][1] + cost], ...entries.slice(at)];
  }
  return [...entries.slice(0, at), [nowMs, cost], ...entries.slice(at)];
}

function resetOf(entries: SlidingWindowLogState, windowMs: number, nowMs: number): number {
  return entries.length === 0 ? 0 : entries[entries.length - 1][0] + windowMs - nowMs;
}
