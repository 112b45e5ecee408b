import type { ResolvedPolicy } from '../../policy/policy.types.js';
import { type Algorithm } from '../algorithm.js';
import { type PeriodCount, refundPeriod, stepPeriod } from '../period-counter.js';
import { quotaPeriodAt } from './quota-period.js';

/** Units used in the calendar period that starts at `period` (ms since the epoch). */
export type QuotaState = PeriodCount;

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
 * Quota: at most `limit` units per calendar period — the fixed window's counter, with local midnights for
 * edges. The stores decide it like the others; with PostgreSQL, its usage lives in a durable table.
 */
export const quota: Algorithm<QuotaState> = {
  step(state, policy, nowMs, cost) {
    const { startMs, endMs } = periodOf(policy, nowMs);
    return stepPeriod(state, startMs, endMs - nowMs, policy.limit, cost);
  },

  refund(state, policy, nowMs, amount) {
    return refundPeriod(state, periodOf(policy, nowMs).startMs, amount);
  },
};
