import { type Algorithm } from '../algorithm.js';
import { newestPeriod, type PeriodCount, refundPeriod, stepPeriod } from '../period-counter.js';

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
};
