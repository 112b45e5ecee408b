import type { ResolvedPolicy } from '../../policy/policy.types.js';
import { type Algorithm } from '../algorithm.js';
import { chargePeriod, newestPeriod, type PeriodCount, refundPeriod, stepPeriod } from '../period-counter.js';
import { quotaPeriodAt } from './quota-period.js';

/** Units used in the calendar period that starts at `period` (ms since the epoch). */
export type QuotaState = PeriodCount;

/** A quota's period: its edges, and the end of the period after it (where a clock ahead may already be). */
export interface QuotaPeriod {
  readonly startMs: number;
  readonly endMs: number;
  readonly nextEndMs: number;
}

const lastPeriods = new WeakMap<object, QuotaPeriod>();

/** The period of a quota policy that holds `nowMs`, remembered per policy until it ends. */
export function periodOf(policy: ResolvedPolicy, nowMs: number): QuotaPeriod {
  const quota = policy.quota;
  if (quota === undefined) throw new TypeError(`nest-rate-limit: policy "${policy.name}" is not a quota`);
  const last = lastPeriods.get(quota);
  if (last !== undefined && last.startMs <= nowMs && nowMs < last.endMs) return last;
  const { startMs, endMs } = quotaPeriodAt(quota.period, quota.timeZone, nowMs);
  const period = { startMs, endMs, nextEndMs: quotaPeriodAt(quota.period, quota.timeZone, endMs).endMs };
  lastPeriods.set(quota, period);
  return period;
}

/**
 * Quota: at most `limit` units per calendar period — the fixed window's counter, with local midnights for
 * edges. The stores decide it like the others; with PostgreSQL, its usage lives in a durable table. A key that
 * holds the next period (written by an instance whose clock is past the edge already) counts in that one.
 */
export const quota: Algorithm<QuotaState> = {
  step(state, policy, nowMs, cost) {
    const { startMs, endMs, nextEndMs } = periodOf(policy, nowMs);
    if (state !== undefined && state.period > startMs) {
      return stepPeriod(state, state.period, nextEndMs - nowMs, policy.limit, cost);
    }
    return stepPeriod(state, startMs, endMs - nowMs, policy.limit, cost);
  },

  refund(state, policy, nowMs, amount) {
    return refundPeriod(state, newestPeriod(state, periodOf(policy, nowMs).startMs), amount);
  },

  /** Used in the period a step would count in, past the limit: the period is spent until it ends. */
  charge(state, policy, nowMs, amount) {
    return chargePeriod(state, newestPeriod(state, periodOf(policy, nowMs).startMs), amount);
  },
};
