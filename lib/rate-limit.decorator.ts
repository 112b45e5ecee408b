import { SetMetadata } from '@nestjs/common';

import type { RateLimitPolicy } from './policy/policy.types.js';
import { RATE_LIMIT_POLICIES, RATE_LIMIT_SKIP } from './rate-limit.constants.js';

/**
 * Declares the policies of a controller or handler. Handler policies replace class and default policies of
 * the same name; all policies of a request are decided together.
 * @example @RateLimit({ name: 'export', algorithm: 'token-bucket', limit: 10_000, window: '1m', cost: (ctx) => rowsOf(ctx) })
 */
export const RateLimit = (policies: RateLimitPolicy | RateLimitPolicy[]): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_POLICIES, Array.isArray(policies) ? policies : [policies]);

/**
 * Skips rate limiting: with no names, every policy of that class or handler; with names, those policies.
 * @example @SkipRateLimit() health() {}   @SkipRateLimit('per-user') upload() {}
 */
export const SkipRateLimit = (...names: string[]): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_SKIP, names.length === 0 ? true : names);
