import { Controller, Get, Post } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';
import request from 'supertest';

import {
  RateLimit,
  type RateLimitDecisionEvent,
  type RateLimitDuration,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { startGraphQLApp } from '../support/graphql-app.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { redisForSpec } from '../support/redis-server.js';
import { storeOptions } from '../support/store-options.js';

const LOGIN: RateLimitPolicy = {
  name: 'login-ip',
  algorithm: 'sliding-window-log',
  limit: 3,
  window: '1m',
  key: 'ip',
  block: '15m',
};

@Controller()
class AuthController {
  @Post('login')
  @RateLimit(LOGIN)
  login() {
    return 'ok';
  }

  @Get('search')
  @RateLimit({ name: 'search', algorithm: 'fixed-window', limit: 100, window: '1m', key: 'ip' })
  search() {
    return 'ok';
  }
}

const redis = redisForSpec();

describe.each(ADAPTERS)('blocks over HTTP (%s)', (adapter) => {
  describe.each(['memory', 'redis'] as const)('on the %s store', (store) => {
    it('blocks an IP for 15 minutes after its 4th login in a minute; Retry-After counts the block down', async () => {
      const events: RateLimitDecisionEvent[] = [];
      const { app, clock } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot({ ...storeOptions(store, { redis }), onDecision: (e) => events.push(e) })],
        controllers: [AuthController],
      });
      try {
        const login = () => request(app.getHttpServer()).post('/login');
        for (let i = 0; i < 3; i++) expect((await login()).status).toBe(201);
        const denied = await login();
        expect(denied.status).toBe(429);
        expect(denied.headers['retry-after']).toBe('900');
        expect(events.at(-1)).toMatchObject({ policy: 'login-ip', allowed: false, blocked: true });
        clock.advance(60_000); // the window is over, the block is not
        const later = await login();
        expect(later.status).toBe(429);
        expect(later.headers['retry-after']).toBe('840');
        clock.advance(840_000);
        expect((await login()).status).toBe(201);
      } finally {
        await app.close();
      }
    });

    it('bans and lifts a ban by hand through RateLimitService, on a policy without a block of its own', async () => {
      const { app } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot(storeOptions(store, { redis }))],
        controllers: [AuthController],
      });
      try {
        const service = app.get(RateLimitService);
        const search = () => request(app.getHttpServer()).get('/search');
        expect((await search()).status).toBe(200);
        await service.block('search', 'ip:127.0.0.1', 120_000);
        const banned = await search();
        expect(banned.status).toBe(429);
        expect(banned.headers['retry-after']).toBe('120');
        expect(await service.peek('search', 'ip:127.0.0.1')).toMatchObject({
          allowed: false,
          blocked: true,
          retryAfterMs: 120_000,
        });
        await service.unblock('search', 'ip:127.0.0.1');
        const lifted = await search();
        expect(lifted.status).toBe(200);
        // The request before the ban still counts; the ones the ban refused do not.
        expect(lifted.headers['ratelimit']).toContain('r=98');
        await expect(service.block('search', 'ip:127.0.0.1', 0)).rejects.toThrow(
          'durationMs must be a whole number of milliseconds >= 1, got 0',
        );
      } finally {
        await app.close();
      }
    });
  });
});

it('rejects a block that is not a duration, naming the policy and the field', async () => {
  await expect(
    createApp('express', {
      imports: [RateLimitModule.forRoot({ defaults: [{ ...LOGIN, block: 'forever' as RateLimitDuration }] })],
    }),
  ).rejects.toThrow(/"login-ip".*field "block": must be a whole number of milliseconds >= 1 or a duration/s);
});

@Resolver()
class SignInResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ ...LOGIN, name: 'gql-login', limit: 1 })
  signIn(): string {
    return 'welcome';
  }
}

describe('blocks in GraphQL', () => {
  it('answers a blocked operation with RATE_LIMITED and the block as retryAfter', async () => {
    const gql = await startGraphQLApp('apollo', { resolvers: [SignInResolver], rateLimit: {} });
    try {
      expect((await gql.gql('{ signIn }')).data).toEqual({ signIn: 'welcome' });
      const denied = await gql.gql('{ signIn }');
      expect(denied.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 900 });
      gql.clock.advance(300_000);
      const later = await gql.gql('{ signIn }');
      expect(later.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 600 });
    } finally {
      await gql.close();
    }
  });
});
