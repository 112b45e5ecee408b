import { SetMetadata } from '@nestjs/common';

import type { RateLimitPolicy } from '../policy/policy.types.js';
import { RATE_LIMIT_POLICIES, RATE_LIMIT_SKIP } from '../planning/metadata-keys.js';

/**
 * Declares the policies of a controller or handler. Handler policies replace class and default policies of
 * the same name; all policies of a request are decided together. Stacked `@RateLimit` decorators on one class
 * or handler add up, in source order (the top one first); one name twice on one target stops the start.
 * A subclass without a class-level `@RateLimit` of its own has its parent's; one with its own has only those
 * (as with Nest's SetMetadata, read through Reflector.get).
 * @example @RateLimit({ name: 'export', algorithm: 'token-bucket', limit: 10_000, window: '1m', cost: (ctx) => rowsOf(ctx) })
 */
export const RateLimit =
  (policies: RateLimitPolicy | RateLimitPolicy[]): ClassDecorator & MethodDecorator =>
  (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor): void => {
    const on = (descriptor === undefined ? target : descriptor.value) as object;
    // Own metadata only: a class's would otherwise include (and copy) its parent's. Decorators apply bottom-up,
    // so the policies of this one go before those of the decorators below it. A new array each time.
    const below = (Reflect.getOwnMetadata(RATE_LIMIT_POLICIES, on) as RateLimitPolicy[] | undefined) ?? [];
    Reflect.defineMetadata(RATE_LIMIT_POLICIES, [...(Array.isArray(policies) ? policies : [policies]), ...below], on);
  };

/**
 * Skips rate limiting: with no names, every policy of that class or handler; with names, those policies.
 * @example @SkipRateLimit() health() {}   @SkipRateLimit('per-user') upload() {}
 */
export const SkipRateLimit = (...names: string[]): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_SKIP, names.length === 0 ? true : names);
