import { ceilDiv } from '../util/integer-math.js';

/**
 * The most a TAT may be ahead of now, in µs (2^51 µs, about 71 years): with now in µs below 2^52 (until 2112),
 * every sum of the step stays below 2^53, so the Lua, SQL and TypeScript twins compute the same integers.
 * Validation refuses a policy whose burst × emission interval, or 1000 × window in ms, exceeds it.
 */
export const MAX_LEAD_US = 2 ** 51;

/**
 * The emission interval in µs of `limit` per `windowMs`: ceil(1000 × windowMs / limit). Rounded up, it never
 * admits more than the limit; it is the exact rate whenever the limit divides 1000 × windowMs.
 */
export const emissionUs = (limit: number, windowMs: number): number => ceilDiv(1000 * windowMs, limit);

/**
 * The most of its limit a GCRA policy may lose to the emission interval's rounding up to a whole µs (1%): past
 * it (above about 10,000 a second, unless the limit divides 1000 × windowMs) validation refuses the policy, as a
 * limit the module would silently enforce lower (800,000 a second has T = 2 µs: 500,000 a second).
 */
export const MAX_GCRA_SHORTFALL = 0.01;

/** How many requests a window admits at the emission interval's rate, once the burst is spent. */
export const gcraRatePerWindow = (limit: number, windowMs: number): number =>
  (1000 * windowMs) / emissionUs(limit, windowMs);
