import { quotaPeriodAt } from './quota/quota-period.js';
import { emissionUs } from '../policy/emission.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';

/**
 * How many of the `charged` units a charge made at `atMs` still holds at `nowMs`: the most a refund then may
 * give back without freeing units that later requests took.
 *
 * Windows (fixed, sliding counter, log, quota, concurrency): all of them while the charge's window, period or
 * entry lasts, none after (stores refund into a key's current window and its newest entries).
 *
 * Buckets (token bucket, GCRA): what has not yet had time to refill of the charge had it been the first
 * charge of an empty queue: `charged − ⌈(nowMs − atMs) / T⌉` units at the emission interval T, at least 0. A
 * bucket refills in order, so the charge's units refill no sooner than that; however the key was used since
 * (other charges queue behind it, refunds of earlier charges only move it forward), they are still missing
 * from the bucket, and giving them back frees nothing another request holds. Exact (what the key would
 * still hold had the actual cost been charged at the start) when the charge found the bucket full; when it
 * found earlier units owed, less: the store cannot tell whether those were given back since.
 */
export function unitsStillHeld(
  policy: ResolvedPolicy,
  charged: number,
  atMs: number,
  nowMs: number,
  resetMs?: number,
): number {
  const { algorithm, windowMs, limit } = policy;
  // a clock that stepped back has let nothing refill
  const elapsedMs = Math.max(0, nowMs - atMs);
  if (algorithm === 'token-bucket') {
    // in units of 1/windowMs of a token, as the bucket counts (integers below 2^53: charged ≤ capacity)
    const left = charged * windowMs - elapsedMs * limit;
    return left <= 0 ? 0 : Math.floor(left / windowMs);
  }
  if (algorithm === 'gcra') {
    const t = emissionUs(limit, windowMs);
    const left = charged * t - elapsedMs * 1000;
    return left <= 0 ? 0 : Math.floor(left / t);
  }
  return windowStillHeld(policy, atMs, nowMs, resetMs) ? charged : 0;
}

/** Whether the window, period or entry a charge at `atMs` counted in still counts at `nowMs`. */
function windowStillHeld(policy: ResolvedPolicy, atMs: number, nowMs: number, resetMs?: number): boolean {
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
