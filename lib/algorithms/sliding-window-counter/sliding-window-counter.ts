import { type Algorithm, MAX_CHARGED_UNITS, type StepResult } from '../algorithm.js';

/** Counts of the current clock-aligned window (`window` is its index) and of the one before it. */
export interface SlidingWindowCounterState {
  readonly window: number;
  readonly current: number;
  readonly previous: number;
}

/**
 * The window a key counts in and the key's time: this instance's, or, when the key holds a later window
 * (another instance's clock is ahead), the start of that window, where the previous window weighs most.
 */
function newest(state: SlidingWindowCounterState | undefined, w: number, nowMs: number): [index: number, atMs: number] {
  const index = Math.floor(nowMs / w);
  return state !== undefined && state.window > index ? [state.window, state.window * w] : [index, nowMs];
}

function normalize(state: SlidingWindowCounterState | undefined, index: number): [number, number] {
  if (state === undefined) return [0, 0];
  if (state.window === index) return [state.current, state.previous];
  if (state.window === index - 1) return [0, state.current];
  return [0, 0];
}

/**
 * Sliding window counter: `estimate = current + previous × (1 − elapsed / windowMs)` must stay within
 * `limit`. Computed scaled by windowMs (`current·W + previous·(W − elapsed)` against `limit·W`), so it is exact.
 * Two counters per key, smooth at window edges: the usual choice for general API limits. A key that holds a
 * later window than this instance's clock counts as at the start of that window (never less than it holds).
 */
export const slidingWindowCounter: Algorithm<SlidingWindowCounterState> = {
  step(state, policy, nowMs, cost): StepResult<SlidingWindowCounterState> {
    const { limit, windowMs: w } = policy;
    const [index, atMs] = newest(state, w, nowMs);
    const elapsed = atMs - index * w;
    const [current, previous] = normalize(state, index);
    const used = current * w + previous * (w - elapsed);
    const capacity = limit * w;
    const resetFor = (cur: number): number =>
      cur > 0 ? (index + 2) * w - nowMs : previous > 0 ? (index + 1) * w - nowMs : 0;
    const remainingNow = Math.max(0, Math.floor((capacity - used) / w));

    if (cost > limit) {
      return { state, allowed: false, remaining: remainingNow, resetMs: resetFor(current), retryAfterMs: Infinity };
    }
    if (used + cost * w <= capacity) {
      const next = current + cost;
      return {
        state: next > 0 || previous > 0 ? { window: index, current: next, previous } : undefined,
        allowed: true,
        remaining: Math.floor((capacity - used - cost * w) / w),
        resetMs: resetFor(next),
        retryAfterMs: 0,
      };
    }
    let retryAfterMs: number;
    if (current + cost <= limit) {
      // Fits later in this window, once the previous window's weight has decayed enough (previous > 0 here).
      const slack = (limit - current - cost) * w;
      retryAfterMs = w - Math.floor(slack / previous) - elapsed + (atMs - nowMs);
    } else {
      // Only in the next window, where this window's count becomes the decaying one (current > 0 here).
      const slack = (limit - cost) * w;
      retryAfterMs = (index + 1) * w + Math.max(0, w - Math.floor(slack / current)) - nowMs;
    }
    return { state, allowed: false, remaining: remainingNow, resetMs: resetFor(current), retryAfterMs };
  },

  refund(state, policy, nowMs, amount) {
    const [index] = newest(state, policy.windowMs, nowMs);
    const [current, previous] = normalize(state, index);
    const fromCurrent = Math.min(current, amount);
    const nextPrevious = Math.max(0, previous - (amount - fromCurrent));
    const nextCurrent = current - fromCurrent;
    return nextCurrent > 0 || nextPrevious > 0
      ? { window: index, current: nextCurrent, previous: nextPrevious }
      : undefined;
  },

  /**
   * Counts `amount` in the window a step would count in, past the limit: the estimate stays above the limit
   * until this window's weight has decayed in the next one (the step's retryAfterMs counts that down). The
   * window's count is clamped at MAX_CHARGED_UNITS / windowMs.
   */
  charge(state, policy, nowMs, amount) {
    const w = policy.windowMs;
    const [index] = newest(state, w, nowMs);
    const [current, previous] = normalize(state, index);
    const most = Math.floor(MAX_CHARGED_UNITS / w);
    const next = amount > most - current ? Math.max(current, most) : current + amount;
    return next > 0 || previous > 0 ? { window: index, current: next, previous } : undefined;
  },
};
