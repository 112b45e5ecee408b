import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';

import { DECIDES } from '../planning/guard-coverage.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * Decides the rate-limit policies of a request and denies it with 429 (or 503 when a fail-closed policy's
 * store is down). Registered globally by default; with `global: false`, put it on controllers or handlers
 * after your authentication guard. A request is decided once, however many times the guard is registered.
 * @example @UseGuards(AuthGuard, RateLimitGuard)
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(protected readonly limiter: RateLimiter) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    this.limiter.scopes.enter(ctx); // before any await: the handler runs in the execution it is entered on
    await this.limiter.handle(ctx, 'guard');
    return true;
  }
}

/**
 * The guard as APP_GUARD. Global guards run before controller and handler guards, so when a user-keyed
 * policy finds no user yet, it leaves the request to RateLimitInterceptor, which runs after every guard.
 */
@Injectable()
export class GlobalRateLimitGuard extends RateLimitGuard {
  constructor(
    limiter: RateLimiter,
    @Inject(RATE_LIMIT_OPTIONS) private readonly options: RateLimitModuleOptions,
  ) {
    super(limiter);
  }

  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    // With `global: false` too: the first guard a request meets is where its reservations are best tracked from.
    this.limiter.scopes.enter(ctx);
    if (this.options.global !== false) await this.limiter.handle(ctx, 'global-guard');
    return true;
  }
}

// Covers the handlers it is placed on, subclasses included (checked at start with `global: false`).
Object.defineProperty(RateLimitGuard.prototype, DECIDES, { value: true });
// The module's own APP_GUARD decides nothing with `global: false`: it covers no handler then.
Object.defineProperty(GlobalRateLimitGuard.prototype, DECIDES, { value: false });
