import { type Algorithm, ceilDiv, type StepResult } from '../algorithm.js';

/**
 * Tokens in the bucket scaled by windowMs (one request = windowMs units, refilled at `limit` units per
 * millisecond, so the refill is exact integer math), and the time in ms they were counted at.
 */
export interface TokenBucketState {
  readonly tokens: number;
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
    const [tokens, atMs] = refill(state, full, limit, nowMs);
    const need = cost * w;
    if (cost > policy.capacity || need > tokens) {
      return {
        state,
        allowed: false,
        remaining: Math.floor(tokens / w),
        resetMs: ceilDiv(full - tokens, limit),
        retryAfterMs: cost > policy.capacity ? Infinity : ceilDiv(need - tokens, limit),
      };
    }
    const left = tokens - need;
    return {
      state: left < full ? { tokens: left, atMs } : undefined,
      allowed: true,
      remaining: Math.floor(left / w),
      resetMs: ceilDiv(full - left, limit),
      retryAfterMs: 0,
    };
  },

  refund(state, policy, nowMs, amount) {
    const full = policy.capacity * policy.windowMs;
    const [tokens, atMs] = refill(state, full, policy.limit, nowMs);
    const next = Math.min(full, tokens + amount * policy.windowMs);
    return next < full ? { tokens: next, atMs } : undefined;
  },
};

/** Tokens at `nowMs` and the time they are counted at; a clock that steps back refills nothing. */
function refill(state: TokenBucketState | undefined, full: number, limit: number, nowMs: number): [number, number] {
  if (state === undefined) return [full, nowMs];
  const elapsed = nowMs - state.atMs;
  if (elapsed <= 0) return [Math.min(full, state.tokens), state.atMs];
  return [Math.min(full, state.tokens + elapsed * limit), nowMs];
}
