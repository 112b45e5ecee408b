import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';

import { DECIDES } from '../planning/guard-coverage.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import { RateLimiter } from './rate-limiter.js';
import { DONE } from '../limiter/request-limiter.js';

/** The answer of a guard that let the request through: one settled Promise for all of them. */
const ALLOWED: Promise<boolean> = Promise.resolve(true);
const allowed = (): boolean => true;

/** `true` once the limiter has handled a request (its Promise rejects with the denial). */
function handled(handling: Promise<void>): Promise<boolean> {
  return handling === DONE ? ALLOWED : handling.then(allowed);
}

/**
 * Decides the rate-limit policies of a request and denies it with 429 (or 503 when a fail-closed policy's
 * store is down). Registered globally by default; with `global: false`, put it on controllers or handlers
 * after your authentication guard. A request is decided once, however many times the guard is registered.
 * @example @UseGuards(AuthGuard, RateLimitGuard)
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(protected readonly limiter: RateLimiter) {}

  // Not async functions: an async frame per request for a Promise of `true` is garbage (handled() chains it).
  canActivate(ctx: ExecutionContext): Promise<boolean> {
    try {
      this.limiter.scopes.enter(ctx); // before any await: the handler runs in the execution it is entered on
    } catch (error) {
      return Promise.reject(error);
    }
    return handled(this.limiter.handle(ctx, 'guard'));
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

  override canActivate(ctx: ExecutionContext): Promise<boolean> {
    try {
      // With `global: false` too: the first guard a request meets is where its reservations are best tracked from.
      this.limiter.scopes.enter(ctx);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.options.global === false ? ALLOWED : handled(this.limiter.handle(ctx, 'global-guard'));
  }
}

// Covers the handlers it is placed on, subclasses included (checked at start with `global: false`).
Object.defineProperty(RateLimitGuard.prototype, DECIDES, { value: true });
// The module's own APP_GUARD decides nothing with `global: false`: it covers no handler then.
Object.defineProperty(GlobalRateLimitGuard.prototype, DECIDES, { value: false });
