import { Controller, Get, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import request from 'supertest';

import { RateLimit, RateLimitModule, validatePolicy } from '../../lib/index.js';
import { DenyCache } from '../../lib/engine/coherence/deny-cache.js';
import { FakeClock } from '../../lib/testing/index.js';
import { createApp } from '../support/nest-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { decisionCalls, itemsDecided } from '../support/redis-commands.js';
import { alignedStart } from '../support/time.js';

@Controller()
class FloodController {
  @Get('flood')
  @RateLimit({ name: 'flood', algorithm: 'fixed-window', limit: 100, window: '1m', key: 'ip' })
  flood() {
    return 'ok';
  }

  @Get('pair')
  @RateLimit([
    { name: 'pair-tight', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' },
    { name: 'pair-loose', algorithm: 'sliding-window-counter', limit: 50, window: '1h', key: 'ip' },
  ])
  pair() {
    return 'ok';
  }
}

/** Decisions Redis made: each reads its key once (one GET per single-policy consume, whatever the calls). */
const decisionsInRedis = (admin: Redis) => itemsDecided(admin);

describe('the local cache of denials', () => {
  let redis: TestRedis;
  let app: INestApplication;
  let clock: FakeClock;
  beforeAll(async () => {
    redis = await startRedis();
    ({ app, clock } = await createApp(
      'express',
      // A generous timeout: 100 requests at once on 2 shared cores must not fall into the fail mode here. The
      // cache's own bound (denyCacheMs, in real time) is tested in test/unit/deny-cache-trust.spec.ts: here a
      // denial is trusted for as long as the flood takes, however slow the machine.
      {
        imports: [RateLimitModule.forRoot({ redis: { url: redis.url }, timeout: 2000, denyCacheMs: 3_600_000 })],
        controllers: [FloodController],
      },
      new FakeClock(alignedStart(60_000)),
    ));
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  // Regression: a 429 from the local cache listed only the denying policy in RateLimit and RateLimit-Policy,
  // while the store's 429 for the same request lists every policy of the route.
  it('answers with the same rate-limit header items as the store did', async () => {
    const admin = redis.client();
    expect((await request(app.getHttpServer()).get('/pair')).status).toBe(200);
    const byStore = await request(app.getHttpServer()).get('/pair');
    const before = await decisionCalls(admin);
    const byCache = await request(app.getHttpServer()).get('/pair');
    expect(await decisionCalls(admin)).toBe(before); // answered locally
    expect(byStore.status).toBe(429);
    expect(byCache.status).toBe(429);
    expect(byCache.headers['ratelimit-policy']).toBe(byStore.headers['ratelimit-policy']);
    expect(byCache.headers['ratelimit-policy']).toContain('"pair-loose"');
    expect(byCache.headers['ratelimit']).toContain('"pair-loose";r=49');
    expect(byCache.headers['ratelimit']).toContain('"pair-tight";r=0');
    expect(byCache.body).toEqual(byStore.body);
  });

  it('answers a single-key flood locally once Redis has denied: 10,000 requests at 100 per minute', async () => {
    const admin = redis.client();
    const before = await decisionsInRedis(admin);
    const statuses: number[] = [];
    for (let batch = 0; batch < 100; batch++) {
      const responses = await Promise.all(
        Array.from({ length: 100 }, () => request(app.getHttpServer()).get('/flood')),
      );
      statuses.push(...responses.map((r) => r.status));
    }
    const sent = (await decisionsInRedis(admin)) - before;
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9_900);
    // every admission is one decision in Redis (several may share a call); beyond those, only the denials in
    // flight before the first came back
    expect(sent).toBeLessThanOrEqual(100 + 100);
    expect(sent).toBeGreaterThanOrEqual(101);
    // the cached denial carries the same headers and wait as Redis' own
    const cached = await request(app.getHttpServer()).get('/flood');
    expect(cached.headers['retry-after']).toBe('60');
    expect(cached.headers['ratelimit']).toBe('"flood";r=0;t=60');
    // and ends when the denial ends: the next window is decided by Redis again
    clock.advance(60_000);
    expect((await request(app.getHttpServer()).get('/flood')).status).toBe(200);
    // 10,000 HTTP requests take 10-30 s on 2 busy cores: a time limit of its own, not the suite's 30 s
  }, 90_000);
});

describe('DenyCache', () => {
  const policy = validatePolicy({ name: 'p', algorithm: 'token-bucket', limit: 10, window: '1s' });
  const denied = { allowed: false, policy: 'p', limit: 10, remaining: 3, resetMs: 700, retryAfterMs: 200 };

  it('denies at least the denied cost until the denial ends, and asks the store for less', () => {
    const cache = new DenyCache();
    cache.remember(policy, 'k', 5, denied, 1000, cache.begin());
    expect(cache.check(policy, 'k', 5, 1100)).toMatchObject({ allowed: false, retryAfterMs: 100, resetMs: 600 });
    expect(cache.check(policy, 'k', 9, 1199)).toMatchObject({ retryAfterMs: 1 });
    expect(cache.check(policy, 'k', 4, 1100)).toBeUndefined();
    expect(cache.check(policy, 'other', 5, 1100)).toBeUndefined();
    expect(cache.check(policy, 'k', 5, 1200)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps nothing for allowed or never-fitting decisions, forgets on request, and stays within its bound', () => {
    const cache = new DenyCache({ maxKeys: 100 });
    cache.remember(policy, 'a', 1, { ...denied, allowed: true, retryAfterMs: 0 }, 0, cache.begin());
    cache.remember(policy, 'b', 11, { ...denied, retryAfterMs: Infinity }, 0, cache.begin());
    expect(cache.size).toBe(0);
    cache.remember(policy, 'c', 1, denied, 0, cache.begin());
    cache.forget(policy, 'c');
    expect(cache.check(policy, 'c', 1, 10)).toBeUndefined();
    for (let i = 0; i < 1000; i++) cache.remember(policy, `k${i}`, 1, denied, 0, cache.begin());
    expect(cache.size).toBe(100);
    expect(cache.check(policy, 'k999', 1, 10)).toBeDefined();
    expect(cache.check(policy, 'k0', 1, 10)).toBeUndefined();
  });
});
