import { type Algorithm } from '../algorithm.js';
import { chargePeriod, newestPeriod, type PeriodCount, refundPeriod, stepPeriod } from '../period-counter.js';

/** One counter per clock-aligned window: `period` is the window index `floor(now / windowMs)`. */
export type FixedWindowState = PeriodCount;

/**
 * Fixed window: at most `limit` units per window `[k·windowMs, (k+1)·windowMs)`. Cheap and predictable; a
 * client may spend a whole window's limit at the end of one window and again at the start of the next. A key
 * that holds a later window than this instance's clock (another instance's clock is ahead) counts in that one.
 */
export const fixedWindow: Algorithm<FixedWindowState> = {
  step(state, policy, nowMs, cost) {
    const index = newestPeriod(state, Math.floor(nowMs / policy.windowMs));
    return stepPeriod(state, index, (index + 1) * policy.windowMs - nowMs, policy.limit, cost);
  },

  refund(state, policy, nowMs, amount) {
    return refundPeriod(state, newestPeriod(state, Math.floor(nowMs / policy.windowMs)), amount);
  },

  /** Counted in the window a step would count in, past the limit: the window is spent until it ends. */
  charge(state, policy, nowMs, amount) {
    return chargePeriod(state, newestPeriod(state, Math.floor(nowMs / policy.windowMs)), amount);
  },
};

/**
 * The window a key counts in under `anchor: 'first-request'`: the one its state holds while it lasts (also
 * when it began later, on the clock of an instance that is ahead: counted against, as newestPeriod does), else
 * one that starts now. `period` is then the window's start in ms.
 */
function windowStart(state: PeriodCount | undefined, windowMs: number, nowMs: number): number {
  return state !== undefined && state.period + windowMs > nowMs ? state.period : nowMs;
}

/**
 * Fixed window from a key's first request (`anchor: 'first-request'`, as throttler's Redis storage counts): at most
 * `limit` units per window `[start, start + windowMs)`, where `start` is the key's first counted request after
 * its previous window ended. A request that is denied, or that costs nothing, starts no window.
 */
export const fixedWindowFromFirstRequest: Algorithm<FixedWindowState> = {
  step(state, policy, nowMs, cost) {
    const start = windowStart(state, policy.windowMs, nowMs);
    return stepPeriod(state, start, start + policy.windowMs - nowMs, policy.limit, cost);
  },

  refund(state, policy, nowMs, amount) {
    return refundPeriod(state, windowStart(state, policy.windowMs, nowMs), amount);
  },

  /** Counted in the key's window (or one that starts now), past the limit: it is spent until it ends. */
  charge(state, policy, nowMs, amount) {
    return chargePeriod(state, windowStart(state, policy.windowMs, nowMs), amount);
  },
};

/**
 * How the Redis store keeps a clock-aligned window's count (fixed-window.lua): one integer,
 * `index × 2^FIXED_WINDOW_COUNT_BITS + count`, which Redis keeps as an integer object and which `INCRBY cost`
 * moves within its window; a state that does not fit is stored as a packed pair.
 */
export const FIXED_WINDOW_COUNT_BITS = 21;
