import type { ResolvedPolicy } from '../../policy/policy.types.js';
import { type Algorithm, type StepResult } from '../algorithm.js';
import { quotaPeriodAt } from './quota-period.js';

/** Units used in the calendar period that starts at `periodStartMs`. */
export interface QuotaState {
  readonly periodStartMs: number;
  readonly used: number;
}

const lastPeriods = new WeakMap<object, { startMs: number; endMs: number }>();

/** The period of a quota policy that holds `nowMs`, remembered per policy until it ends. */
export function periodOf(policy: ResolvedPolicy, nowMs: number): { startMs: number; endMs: number } {
  const quota = policy.quota;
  if (quota === undefined) throw new TypeError(`nestjs-rate-limit: policy "${policy.name}" is not a quota`);
  const last = lastPeriods.get(quota);
  if (last !== undefined && last.startMs <= nowMs && nowMs < last.endMs) return last;
  const period = quotaPeriodAt(quota.period, quota.timeZone, nowMs);
  lastPeriods.set(quota, period);
  return period;
}

/**
 * Quota: at most `limit` units per calendar period (a fixed window whose edges are local midnights). The
 * stores decide it like the others; with PostgreSQL, its usage lives in a durable table.
 */
export const quota: Algorithm<QuotaState> = {
  step(state, policy, nowMs, cost): StepResult<QuotaState> {
    const { startMs, endMs } = periodOf(policy, nowMs);
    const { limit } = policy;
    const used = state !== undefined && state.periodStartMs === startMs ? state.used : 0;
    const periodEndMs = endMs - nowMs;
    if (cost > limit) {
      const resetMs = used > 0 ? periodEndMs : 0;
      return { state, allowed: false, remaining: Math.max(0, limit - used), resetMs, retryAfterMs: Infinity };
    }
    if (used + cost <= limit) {
      const next = used + cost;
      if (next === 0) return { state: undefined, allowed: true, remaining: limit, resetMs: 0, retryAfterMs: 0 };
      return {
        state: { periodStartMs: startMs, used: next },
        allowed: true,
        remaining: limit - next,
        resetMs: periodEndMs,
        retryAfterMs: 0,
      };
    }
    return {
      state,
      allowed: false,
      remaining: Math.max(0, limit - used),
      resetMs: periodEndMs,
      retryAfterMs: periodEndMs,
    };
  },

  refund(state, policy, nowMs, amount) {
    const { startMs } = periodOf(policy, nowMs);
    if (state === undefined || state.periodStartMs !== startMs) return undefined;
    const used = Math.max(0, state.used - amount);
    return used > 0 ? { periodStartMs: startMs, used } : undefined;
  },
};
