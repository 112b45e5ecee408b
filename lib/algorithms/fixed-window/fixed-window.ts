import { type Algorithm, type StepResult } from '../algorithm.js';

/** One counter per clock-aligned window: window index `floor(now / windowMs)` and the units counted in it. */
export interface FixedWindowState {
  readonly window: number;
  readonly count: number;
}

/**
 * Fixed window: at most `limit` units per window `[k·windowMs, (k+1)·windowMs)`. Cheap and predictable; a
 * client may spend a whole window's limit at the end of one window and again at the start of the next.
 */
export const fixedWindow: Algorithm<FixedWindowState> = {
  step(state, policy, nowMs, cost): StepResult<FixedWindowState> {
    const { limit, windowMs } = policy;
    const index = Math.floor(nowMs / windowMs);
    const count = state !== undefined && state.window === index ? state.count : 0;
    const windowEndMs = (index + 1) * windowMs - nowMs;
    if (cost > limit) {
      const resetMs = count > 0 ? windowEndMs : 0;
      return { state, allowed: false, remaining: Math.max(0, limit - count), resetMs, retryAfterMs: Infinity };
    }
    if (count + cost <= limit) {
      const next = count + cost;
      if (next === 0) return { state: undefined, allowed: true, remaining: limit, resetMs: 0, retryAfterMs: 0 };
      return {
        state: { window: index, count: next },
        allowed: true,
        remaining: limit - next,
        resetMs: windowEndMs,
        retryAfterMs: 0,
      };
    }
    return {
      state,
      allowed: false,
      remaining: Math.max(0, limit - count),
      resetMs: windowEndMs,
      retryAfterMs: windowEndMs,
    };
  },

  refund(state, policy, nowMs, amount) {
    const index = Math.floor(nowMs / policy.windowMs);
    if (state === undefined || state.window !== index) return undefined;
    const count = Math.max(0, state.count - amount);
    return count > 0 ? { window: index, count } : undefined;
  },
};
