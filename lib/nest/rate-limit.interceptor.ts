import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { from, type Observable, switchMap } from 'rxjs';

import { DECIDES } from '../planning/guard-coverage.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * Decides the requests the guard left for later (user-keyed policies on routes whose authentication runs in
 * a controller or handler guard), after every guard has run, and writes their headers. On its own it decides
 * every request after the guards.
 * @example @UseInterceptors(RateLimitInterceptor)
 */
@Injectable()
export class RateLimitInterceptor implements NestInterceptor {
  constructor(protected readonly limiter: RateLimiter) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    // Again after the guards: one of the app's that awaited before ours kept their scope from the handler.
    this.limiter.scopes.enter(ctx);
    if (this.limiter.isDecided(ctx)) return next.handle();
    return from(this.limiter.handle(ctx, 'interceptor')).pipe(switchMap(() => next.handle()));
  }
}

// Decides every request after the guards: it covers the handlers it is placed on (see RateLimitGuard).
Object.defineProperty(RateLimitInterceptor.prototype, DECIDES, { value: true });
