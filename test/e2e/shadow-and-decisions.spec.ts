import { jest } from '@jest/globals';
import { Controller, Get, Logger } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';
import request from 'supertest';

import {
  RateLimit,
  type RateLimitDecisionEvent,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitService,
} from '../../lib/index.js';
import { startGraphQLApp } from '../support/graphql-app.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { redisForSpec } from '../support/redis-server.js';
import { perMinute } from '../support/policies.js';

@Controller('login')
class LoginController {
  @Get()
  @RateLimit([perMinute('enforced', 5), perMinute('new-limit', 2, { mode: 'shadow' })])
  login() {
    return 'ok';
  }

  @Get('wide')
  @RateLimit([perMinute('enforced-wide', 1000), perMinute('new-limit-wide', 2, { mode: 'shadow' })])
  wide() {
    return 'ok';
  }
}

const redis = redisForSpec();

const stores = (): Record<string, Partial<RateLimitModuleOptions>> => ({
  memory: {},
  redis: { redis: { url: `redis://127.0.0.1:${redis.port}` }, keyPrefix: `shadow${Math.random()}:` },
});

describe.each(ADAPTERS)('shadow mode over HTTP (%s)', (adapter) => {
  describe.each(['memory', 'redis'])('on the %s store', (store) => {
    async function start(options: Partial<RateLimitModuleOptions> = {}) {
      const events: RateLimitDecisionEvent[] = [];
      const { app, clock } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot({ ...stores()[store], onDecision: (e) => events.push(e), ...options })],
        controllers: [LoginController],
      });
      return { app, clock, events };
    }

    it('never denies for a shadow policy, reports its would-be denials, and leaves it out of the headers', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const { app, clock, events } = await start();
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 5; i++) {
          const res = await request(app.getHttpServer()).get('/login');
          statuses.push(res.status);
          expect(res.headers['ratelimit-policy']).toContain('"enforced"');
          expect(res.headers['ratelimit-policy']).not.toContain('new-limit');
          expect(res.headers['ratelimit']).not.toContain('new-limit');
        }
        expect(statuses).toEqual([200, 200, 200, 200, 200]);
        const shadow = events.filter((e) => e.policy === 'new-limit');
        expect(shadow.map((e) => e.allowed)).toEqual([true, true, false, false, false]);
        expect(shadow.every((e) => e.shadow && !e.blocked && e.cost === 1)).toBe(true);
        expect(events.filter((e) => e.policy === 'enforced').map((e) => [e.allowed, e.shadow, e.remaining])).toEqual([
          [true, false, 4],
          [true, false, 3],
          [true, false, 2],
          [true, false, 1],
          [true, false, 0],
        ]);
        expect(shadow[0]?.context?.getType()).toBe('http');
        // The enforced policy still denies: the sixth request is refused by it alone.
        const sixth = await request(app.getHttpServer()).get('/login');
        expect(sixth.status).toBe(429);
        expect(sixth.body.policy).toBe('enforced');
        // One log line per shadow policy per minute, then one more with the count held back.
        const lines = () => warn.mock.calls.map(([m]) => String(m)).filter((m) => m.includes('Shadow policy'));
        expect(lines()).toHaveLength(1);
        expect(lines()[0]).toContain('"new-limit" would have denied');
        // The log's minute is real time (the module's clock decides limits only): both move on.
        clock.advance(61_000);
        const realNow = performance.now.bind(performance);
        const later = jest.spyOn(performance, 'now').mockImplementation(() => realNow() + 61_000);
        try {
          for (let i = 0; i < 3; i++) expect((await request(app.getHttpServer()).get('/login')).status).toBe(200);
        } finally {
          later.mockRestore();
        }
        expect(lines()).toHaveLength(2);
        // Held back: requests 4 and 5, and the sixth (the shadow policy would have denied it too).
        expect(lines()[1]).toContain('and 3 more in the last minute');
      } finally {
        warn.mockRestore();
        await app.close();
      }
    });

    it('consumes a shadow policy exactly up to its limit under 50 concurrent requests, denying none', async () => {
      const { app } = await start();
      try {
        const statuses = await Promise.all(
          Array.from({ length: 50 }, async () => (await request(app.getHttpServer()).get('/login/wide')).status),
        );
        expect(statuses.filter((s) => s === 200)).toHaveLength(50);
        const service = app.get(RateLimitService);
        expect((await service.peek('new-limit-wide', 'ip:127.0.0.1')).remaining).toBe(0);
        expect((await service.peek('enforced-wide', 'ip:127.0.0.1')).remaining).toBe(950);
      } finally {
        await app.close();
      }
    });

    it("with the module's mode 'shadow', denies nothing and shows no policy", async () => {
      const { app, events } = await start({ mode: 'shadow' });
      try {
        for (let i = 0; i < 8; i++) {
          const res = await request(app.getHttpServer()).get('/login');
          expect(res.status).toBe(200);
          expect(res.headers['ratelimit-policy']).toBeUndefined();
        }
        expect(events.filter((e) => e.policy === 'enforced' && !e.allowed)).toHaveLength(3);
      } finally {
        await app.close();
      }
    });
  });
});

describe('onDecision', () => {
  it('is called for RateLimitService decisions, without a context', async () => {
    const events: RateLimitDecisionEvent[] = [];
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ onDecision: (e) => events.push(e) })],
    });
    try {
      const service = app.get(RateLimitService);
      await service.consume(perMinute('service', 1), 'k', { cost: 1 });
      await service.consume(perMinute('service', 1), 'k', { cost: 1 });
      await service.acquire(perMinute('service-wait', 1), 'k', { maxWaitMs: 0 });
      expect(events.map((e) => [e.policy, e.key, e.allowed, e.context])).toEqual([
        ['service', 'k', true, undefined],
        ['service', 'k', false, undefined],
        ['service-wait', 'k', true, undefined],
      ]);
      expect(events[1]?.retryAfterMs).toBeGreaterThan(0);
    } finally {
      await app.close();
    }
  });

  it('that throws is logged, and the request goes on', async () => {
    const error = jest.spyOn(Logger.prototype, 'error');
    const { app } = await createApp('express', {
      imports: [
        RateLimitModule.forRoot({
          onDecision: () => {
            throw new Error('metrics backend down');
          },
        }),
      ],
      controllers: [LoginController],
    });
    try {
      expect((await request(app.getHttpServer()).get('/login')).status).toBe(200);
      expect(error.mock.calls.map(([m]) => String(m))).toContain('onDecision hook threw: metrics backend down');
    } finally {
      error.mockRestore();
      await app.close();
    }
  });

  it("rejects a module option 'mode' it does not know", async () => {
    await expect(
      createApp('express', {
        imports: [RateLimitModule.forRoot({ mode: 'dry-run' as never })],
        controllers: [LoginController],
      }),
    ).rejects.toThrow(`option "mode" must be 'enforce' or 'shadow', got "dry-run"`);
  });

  it("rejects a policy 'mode' it does not know, naming the policy", async () => {
    await expect(
      createApp('express', {
        imports: [RateLimitModule.forRoot({ defaults: [perMinute('typo', 5, { mode: 'shadows' as never })] })],
      }),
    ).rejects.toThrow(/"typo".*field "mode": must be 'enforce' or 'shadow', got "shadows"/s);
  });
});

@Resolver()
class ShadowResolver {
  @Query(() => String)
  @RateLimit([perMinute('gql-enforced', 100), perMinute('gql-shadow', 1, { mode: 'shadow' })])
  hello(): string {
    return 'hello';
  }
}

describe('shadow mode in GraphQL', () => {
  it('never denies an operation for a shadow policy, and reports it with the GraphQL context', async () => {
    const events: RateLimitDecisionEvent[] = [];
    const gql = await startGraphQLApp('apollo', {
      resolvers: [ShadowResolver],
      rateLimit: { onDecision: (e) => events.push(e) },
    });
    try {
      for (let i = 0; i < 4; i++) {
        const res = await gql.gql('{ hello }');
        expect(res.errors).toBeUndefined();
        expect(res.data).toEqual({ hello: 'hello' });
      }
      const shadow = events.filter((e) => e.policy === 'gql-shadow');
      expect(shadow.map((e) => e.allowed)).toEqual([true, false, false, false]);
      expect(shadow[0]?.context?.getType()).toBe('graphql');
      expect((await gql.service().peek('gql-enforced', 'ip:127.0.0.1')).remaining).toBe(96);
    } finally {
      await gql.close();
    }
  });
});
