import type { ResolvedPolicy } from './policy.types.js';

/**
 * The most a key may owe, in capacities: a settlement (or charge) whose overrun would take a token bucket below
 * `-DEBT_CAP_CAPACITIES × capacity`, or a GCRA TAT further than `(1 + DEBT_CAP_CAPACITIES) × burst × T` ahead
 * of now, is clamped there and reported. One capacity: a real overrun (a completion longer than estimated) owes
 * at most one more full bucket, so the key waits at most two refills; a settle function that counts bytes
 * instead of tokens cannot lock a key for years.
 */
export const DEBT_CAP_CAPACITIES = 1;

/**
 * The most a clock may be ahead of this instance's (`clock: 'local'`) before what it wrote is treated as
 * foreign state: a wait longer than the policy's own maximum by more than this is clamped, counted and logged
 * (by name of policy) once. NTP keeps servers within milliseconds; 2 s leaves room for a VM resumed from a
 * pause or a clock stepped at boot, and is stated in docs/changing-a-policy.md.
 */
export const MAX_CLOCK_SKEW_MS = 2000;

/** A quota's longest period, in ms: 31 days, plus an hour for a daylight-saving change inside it. */
const MONTH_MS = (31 * 24 + 1) * 3600_000;
/** A day, plus an hour for a daylight-saving change. */
const DAY_MS = 25 * 3600_000;

/**
 * The longest wait the policy could ever ask of a client, in ms, at the limit and capacity it decides with
 * (the request's own, for a limit that is a function): a window for the window algorithms (two for the sliding
 * window counter, whose previous window still weighs through the current one), `(1 + DEBT_CAP_CAPACITIES) ×
 * capacity × window / limit` for the buckets (a full burst owed, plus the capped debt), the period for a quota,
 * and the block's duration where it is longer. No decision, cached denial or header asks for more
 * (lib/stores/decisions.ts clamps); a cost that can never fit (Infinity) is not a wait and stays as it is.
 * @example maxWaitMs({ algorithm: 'fixed-window', windowMs: 60_000, ... }) // 60_000
 */
export function maxWaitMs(
  policy: Pick<ResolvedPolicy, 'algorithm' | 'windowMs' | 'limit' | 'capacity' | 'blockMs' | 'quota'>,
): number {
  return Math.max(ownWaitMs(policy), policy.blockMs ?? 0);
}

function ownWaitMs(policy: Pick<ResolvedPolicy, 'algorithm' | 'windowMs' | 'limit' | 'capacity' | 'quota'>): number {
  const { algorithm, windowMs, limit, capacity } = policy;
  switch (algorithm) {
    case 'sliding-window-counter':
      return 2 * windowMs;
    case 'token-bucket':
    case 'gcra':
      // µs rounding of GCRA's emission interval: at most 1 µs per unit, so a ms per 1000 units
      return Math.ceil(((1 + DEBT_CAP_CAPACITIES) * capacity * windowMs) / limit) + Math.ceil(capacity / 500);
    case 'quota':
      return policy.quota?.period === 'day' ? DAY_MS : MONTH_MS;
    default:
      return windowMs;
  }
}
