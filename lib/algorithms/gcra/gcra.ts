import { type Algorithm, ceilDiv, type StepResult } from '../algorithm.js';

/**
 * The theoretical arrival time (TAT), kept exact as `tatMs + rem / limit` milliseconds with 0 <= rem < limit,
 * since the emission interval `windowMs / limit` is rarely a whole number of milliseconds.
 */
export interface GcraState {
  readonly tatMs: number;
  readonly rem: number;
}

/**
 * GCRA: one stored TAT per key. Emission interval T = windowMs / limit; a request of cost c moves the TAT to
 * `max(TAT, now) + c·T` and is allowed when that is at most `burst·T` ahead of now. It decides exactly like
 * a token bucket of capacity `burst` refilled at `limit / windowMs`, with one value stored instead of two.
 * Internally `ahead = (TAT − now)·limit` is in the token bucket's scaled units (one request = windowMs).
 */
export const gcra: Algorithm<GcraState> = {
  step(state, policy, nowMs, cost): StepResult<GcraState> {
    const { limit, windowMs: w } = policy;
    const full = policy.capacity * w;
    const ahead = aheadOf(state, limit, nowMs);
    const need = cost * w;
    if (cost > policy.capacity || ahead + need > full) {
      return {
        state,
        allowed: false,
        remaining: Math.floor(Math.max(0, full - ahead) / w),
        resetMs: ceilDiv(ahead, limit),
        retryAfterMs: cost > policy.capacity ? Infinity : ceilDiv(ahead + need - full, limit),
      };
    }
    const next = ahead + need;
    return {
      state: at(next, limit, nowMs),
      allowed: true,
      remaining: Math.floor((full - next) / w),
      resetMs: ceilDiv(next, limit),
      retryAfterMs: 0,
    };
  },

  refund(state, policy, nowMs, amount) {
    const ahead = aheadOf(state, policy.limit, nowMs);
    return at(Math.max(0, ahead - amount * policy.windowMs), policy.limit, nowMs);
  },
};

function aheadOf(state: GcraState | undefined, limit: number, nowMs: number): number {
  if (state === undefined) return 0;
  return Math.max(0, (state.tatMs - nowMs) * limit + state.rem);
}

function at(ahead: number, limit: number, nowMs: number): GcraState | undefined {
  if (ahead === 0) return undefined;
  const whole = Math.floor(ahead / limit);
  return { tatMs: nowMs + whole, rem: ahead - whole * limit };
}
