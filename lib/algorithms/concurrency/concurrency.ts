import { type Algorithm } from '../algorithm.js';
import {
  alive,
  keyTime,
  slidingWindowLog,
  type SlidingWindowLogState,
} from '../sliding-window-log/sliding-window-log.js';

/**
 * The longest wait, in milliseconds, a concurrency denial tells a client (Retry-After, `retryAfterMs`): 1 s.
 * The step's own wait is when the oldest slot would expire (minutes away: the slot time is only for slots
 * a crashed process never gave back), but a slot frees the moment one running request ends, which no store
 * can predict; 1 s is the shortest wait Retry-After can say. The stores keep deciding the slots as they
 * are: the decision engine caps the wait (lib/engine/slot-wait.ts), so every store agrees.
 */
export const CONCURRENCY_RETRY_MS = 1000;

/** Slots `[acquiredMs, cost]` of a key, oldest first: each lives `windowMs` unless given back before. */
export type ConcurrencyState = SlidingWindowLogState;

/**
 * Concurrency limit: at most `limit` units of a key in flight at once. A request takes a slot when it is
 * admitted and gives it back (refund) when it ends; a slot its process never gave back (a crash) expires
 * `windowMs` after it was taken. Decided as the sliding window log decides the slots of the last `windowMs`;
 * a release gives back the oldest slot first, so the slots left never expire earlier than those released:
 * a release never lets more in than are in flight.
 */
export const concurrency: Algorithm<ConcurrencyState> = {
  step: slidingWindowLog.step,

  refund(state, policy, nowMs, amount) {
    const entries = alive(state, policy.windowMs, keyTime(state, nowMs)).map(([t, c]) => [t, c] as [number, number]);
    let left = amount;
    for (const entry of entries) {
      if (left <= 0) break;
      const take = Math.min(entry[1], left);
      entry[1] -= take;
      left -= take;
    }
    const kept = entries.filter(([, c]) => c > 0);
    return kept.length > 0 ? kept : undefined;
  },

  /** A slot is taken by a request that is admitted and given back when it ends: no overrun to charge. */
  charge(_state, policy) {
    throw new TypeError(notChargeable(policy.name));
  },
};

/**
 * Why a concurrency policy cannot be charged, for the error every store and the engine throw: its units are
 * requests in flight, not a cost known afterwards.
 */
export const notChargeable = (policy: string): string =>
  `nest-rate-limit: policy "${policy}" is a concurrency limit, which cannot be charged: its units are requests ` +
  'in flight, taken when one is admitted and given back when it ends, so there is no overrun to charge. Charge ' +
  'a rate limit or a quota instead';
