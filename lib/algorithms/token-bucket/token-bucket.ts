import { type Algorithm, ceilDiv, type StepResult } from '../algorithm.js';

/**
 * The units taken from the bucket, scaled by windowMs (one request = windowMs units, given back at `limit`
 * units per millisecond, so the refill is exact integer math), and the time in ms they were counted at. The
 * state is in units, not in tokens left or in time: when a key's limit or burst changes (a plan upgrade),
 * what it took stays taken under the new limit, and the bucket refills at the new rate.
 */
export interface TokenBucketState {
  readonly taken: number;
  readonly atMs: number;
}

/**
 * Token bucket: capacity `burst ?? limit`, refilled at `limit / windowMs` per millisecond; a request of cost c
 * takes c tokens. For bursty clients and variable costs (AI tokens, exported rows).
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  step(state, policy, nowMs, cost): StepResult<TokenBucketState> {
    const { limit, windowMs: w } = policy;
    const full = policy.capacity * w;
    const [taken, atMs] = takenAt(state, limit, nowMs);
    const need = cost * w;
    if (cost > policy.capacity || taken + need > full) {
      return {
        state,
        allowed: false,
        remaining: Math.floor(Math.max(0, full - taken) / w),
        resetMs: ceilDiv(taken, limit),
        retryAfterMs: cost > policy.capacity ? Infinity : ceilDiv(taken + need - full, limit),
      };
    }
    const next = taken + need;
    return {
      state: next > 0 ? { taken: next, atMs } : undefined,
      allowed: true,
      remaining: Math.floor((full - next) / w),
      resetMs: ceilDiv(next, limit),
      retryAfterMs: 0,
    };
  },

  refund(state, policy, nowMs, amount) {
    const [taken, atMs] = takenAt(state, policy.limit, nowMs);
    const next = Math.max(0, taken - amount * policy.windowMs);
    return next > 0 ? { taken: next, atMs } : undefined;
  },
};

/** Units taken at `nowMs` and the time they are counted at; a clock that steps back gives nothing back. */
function takenAt(state: TokenBucketState | undefined, limit: number, nowMs: number): [number, number] {
  if (state === undefined) return [0, nowMs];
  const elapsed = nowMs - state.atMs;
  if (elapsed <= 0) return [state.taken, state.atMs];
  return [Math.max(0, state.taken - elapsed * limit), nowMs];
}
