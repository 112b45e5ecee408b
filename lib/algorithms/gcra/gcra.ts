import type { Algorithm } from '../algorithm.js';
import { tokenBucket, type TokenBucketState } from '../token-bucket/token-bucket.js';

/** GCRA's state: how far ahead of now its theoretical arrival time is, in units, and when that was counted. */
export type GcraState = TokenBucketState;

/**
 * GCRA: emission interval T = windowMs / limit; a request of cost c moves the theoretical arrival time (TAT)
 * to `max(TAT, now) + c·T` and is allowed when that is at most `burst·T` ahead of now. This decides exactly
 * like a token bucket of capacity `burst` refilled at `limit / windowMs`, and is computed as one: the state
 * keeps how far ahead the TAT is in units (`(TAT − now)·limit`, one request = windowMs) with the time it was
 * counted at, rather than the TAT itself, so that a key whose limit changes (a plan upgrade) keeps the units
 * it took instead of the time they stand for.
 */
export const gcra: Algorithm<GcraState> = tokenBucket;
