import { quotaPeriodAt } from './quota/quota-period.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';

/**
 * Whether units charged at `atMs` still weigh where a refund at `nowMs` would give them back. Stores refund
 * into a key's current window (and the newest entries of a log): once the charge's window, period or entry
 * is over, a refund would free units that later requests hold, so none is made (under-admission at most).
 * The buckets (token bucket, GCRA) take a refund at any time.
 */
export function stillHeld(policy: ResolvedPolicy, atMs: number, nowMs: number, resetMs?: number): boolean {
  const { algorithm, windowMs, quota } = policy;
  // A window from the first request ends where the charge's decision said (`resetMs`, its reset): a later one
  // may have begun since, whose units a refund must not free.
  if (policy.anchor === 'first-request') return resetMs !== undefined && nowMs < atMs + resetMs;
  if (algorithm === 'fixed-window' || algorithm === 'sliding-window-counter') {
    return Math.floor(atMs / windowMs) === Math.floor(nowMs / windowMs);
  }
  // A concurrency slot past its time has expired: giving one back would release another request's.
  if (algorithm === 'sliding-window-log' || algorithm === 'concurrency') return atMs + windowMs > nowMs;
  if (quota !== undefined) {
    return (
      quotaPeriodAt(quota.period, quota.timeZone, atMs).startMs ===
      quotaPeriodAt(quota.period, quota.timeZone, nowMs).startMs
    );
  }
  return true;
}
