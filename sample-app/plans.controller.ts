import { Controller, Get, Post, UseGuards } from '@nestjs/common';

import { Criticality, RateLimitService, SkipRateLimit } from '../lib/index.js';
import { ApiKeyGuard, type AuthUser, CurrentUser } from './api-key.guard.js';

/** The per-user limit of a customer who upgraded: ten times the declared 100 per minute. */
export const UPGRADED_LIMIT = 1000;

/**
 * A plan upgrade that takes effect at once, on every instance, without a deploy: RateLimitService.override
 * changes the `per-user` limit of one user (kept in the store, the user id as its keyed hash). The declared
 * limit stays the rule; the override is the exception, removed on a downgrade.
 */
@Controller('plans')
@UseGuards(ApiKeyGuard)
export class PlansController {
  constructor(private readonly rateLimits: RateLimitService) {}

  /** Under the caller's `per-user` limit, like any route: its RateLimit-Policy field shows the limit in force. */
  @Get('me')
  me(@CurrentUser() user: AuthUser) {
    return { user: user.id, plan: user.plan };
  }

  // Not limited: a customer who ran out of requests is the one who upgrades.
  @Post('upgrade')
  @SkipRateLimit()
  @Criticality('critical') // a customer paying to get through an incident must get through
  async upgrade(@CurrentUser() user: AuthUser) {
    // The reason is logged: it names no user (the log names the override's hashed identity).
    const override = await this.rateLimits.override('per-user', `user:${user.id}`, {
      limit: UPGRADED_LIMIT,
      reason: 'plan upgrade',
    });
    return { limit: override.limit };
  }

  @Post('downgrade')
  @SkipRateLimit()
  @Criticality('critical')
  async downgrade(@CurrentUser() user: AuthUser) {
    return { removed: await this.rateLimits.removeOverride('per-user', `user:${user.id}`) };
  }
}
