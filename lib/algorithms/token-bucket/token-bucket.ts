import { type Algorithm, MAX_CHARGED_UNITS, type StepResult } from '../algorithm.js';
import { DEBT_CAP_CAPACITIES } from '../../policy/max-wait.js';
import { ceilDiv } from '../../util/integer-math.js';

/**
 * The units taken from the bucket, scaled by windowMs (one request = windowMs units, given back at `limit`
 * units per millisecond, so the refill is exact integer math), the time in ms they were counted at, and the
 * limit they were written with. The state is in units, not in tokens left or in time: when a key's limit or
 * burst changes (a plan upgrade), what it took stays taken under the new limit. Units drain at the limit of
 * the write that counted them until the next write, which counts them at its own limit: so the state runs
 * out exactly when the store's TTL for it does, and a key that expired decides as one that did not.
 */
export interface TokenBucketState {
  readonly taken: number;
  readonly atMs: number;
  readonly limit: number;
}

/**
 * Token bucket: capacity `burst ?? limit`, refilled at `limit / windowMs` per millisecond; a request of cost c
 * takes c tokens. For bursty clients and variable costs (AI tokens, exported rows).
 */
export const tokenBucket: Algorithm<TokenBucketState> = {
  step(state, policy, nowMs, cost): StepResult<TokenBucketState> {
    const { limit, windowMs: w } = policy;
    const full = policy.capacity * w;
    const { taken, atMs, rate } = counted(state, limit, nowMs);
    const need = cost * w;
    if (cost > policy.capacity || taken + need > full) {
      return {
        state,
        allowed: false,
        remaining: Math.floor(Math.max(0, full - taken) / w),
        resetMs: ceilDiv(taken, rate),
        retryAfterMs: cost > policy.capacity ? Infinity : ceilDiv(taken + need - full, rate),
      };
    }
    if (cost === 0) {
      // nothing is written, so the units keep draining at the rate they were written with
      return {
        state,
        allowed: true,
        remaining: Math.floor((full - taken) / w),
        resetMs: ceilDiv(taken, rate),
        retryAfterMs: 0,
      };
    }
    const next = taken + need;
    return {
      state: { taken: next, atMs, limit },
      allowed: true,
      remaining: Math.floor((full - next) / w),
      resetMs: ceilDiv(next, limit),
      retryAfterMs: 0,
    };
  },

  refund(state, policy, nowMs, amount) {
    const { taken, atMs } = counted(state, policy.limit, nowMs);
    const next = Math.max(0, taken - amount * policy.windowMs);
    return next > 0 ? { taken: next, atMs, limit: policy.limit } : undefined;
  },

  /**
   * Takes `amount` tokens even from an empty bucket: taken may pass the capacity, and steps are denied until it
   * has drained below `capacity − cost` (their retryAfterMs counts that down). Clamped at the debt cap, one
   * capacity owed (maxTaken); a key already past it (a capacity lowered since) keeps what it owes.
   */
  charge(state, policy, nowMs, amount) {
    const { taken, atMs } = counted(state, policy.limit, nowMs);
    const w = policy.windowMs;
    const most = Math.max(taken, maxTaken(policy.capacity, w));
    const next = amount > Math.floor((most - taken) / w) ? most : taken + amount * w;
    return next > 0 ? { taken: next, atMs, limit: policy.limit } : undefined;
  },
};

/**
 * The most units (scaled by windowMs) a charge leaves taken: twice MAX_CHARGED_UNITS, so that a step's sums
 * (taken + cost × windowMs, with capacity × windowMs <= 2^51) stay below 2^53.
 */
export const MAX_TAKEN = 2 * MAX_CHARGED_UNITS;

/**
 * The most units (scaled by windowMs) a charge leaves taken: the capacity, and DEBT_CAP_CAPACITIES capacities
 * owed beyond it (so no wait is longer than maxWaitMs), within MAX_TAKEN.
 */
export const maxTaken = (capacity: number, windowMs: number): number =>
  Math.min(MAX_TAKEN, (1 + DEBT_CAP_CAPACITIES) * capacity * windowMs);

/**
 * Units taken at `nowMs`, the time they are counted at and the rate they drain at until the next write (the
 * limit of the last one); a clock that steps back gives nothing back.
 */
function counted(
  state: TokenBucketState | undefined,
  limit: number,
  nowMs: number,
): { taken: number; atMs: number; rate: number } {
  if (state === undefined) return { taken: 0, atMs: nowMs, rate: limit };
  const rate = state.limit;
  const elapsed = nowMs - state.atMs;
  if (elapsed <= 0) return { taken: state.taken, atMs: state.atMs, rate };
  return { taken: Math.max(0, state.taken - elapsed * rate), atMs: nowMs, rate };
}
