import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { redisForSpec } from '../support/redis-server.js';
import { commandsRun } from '../support/redis-commands.js';
import { alignedStart } from '../support/time.js';
import { perMinute } from '../support/policies.js';

@Controller()
class RedisListsController {
  @Get('three')
  @RateLimit([perMinute('one', 50), perMinute('two', 50), perMinute('three', 50)])
  three() {
    return 'ok';
  }

  @Get('signup')
  @RateLimit(perMinute('signup', 50, { deny: ['192.0.2.0/24', async () => false] }))
  signup() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit(
    perMinute('closed', 50, {
      failMode: 'closed',
      deny: [
        () => {
          throw new Error('lookup down');
        },
      ],
    }),
  )
  closed() {
    return 'ok';
  }

  @Get('flood')
  @RateLimit(perMinute('flood', 100))
  flood() {
    return 'ok';
  }
}

describe.each(ADAPTERS)('allow and deny lists on %s with Redis: no store call', (adapter: AdapterName) => {
  const redis = redisForSpec();
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await redis.shared.flushall();
  });

  const start = async (options: RateLimitModuleOptions) => {
    ({ app } = await createApp(
      adapter,
      {
        imports: [
          RateLimitModule.forRoot({
            redis: { url: redis.url },
            trustProxy: 'loopback',
            defaults: [perMinute('per-ip', 1000)],
            ...options,
          }),
        ],
        controllers: [RedisListsController],
      },
      new FakeClock(alignedStart(60_000) + 60_000),
    ));
  };
  const get = (path: string, ip: string) =>
    request((app as INestApplication).getHttpServer())
      .get(path)
      .set('x-forwarded-for', ip);
  const all = (count: number, path: string, ip: (i: number) => string) =>
    Promise.all(Array.from({ length: count }, (_, i) => get(path, ip(i))));

  it('a module-level allow skips every policy of the request: no Redis command, no key', async () => {
    await start({ allow: ['10.0.0.0/8', '2001:db8:a::/48'] });
    // A client not on the list: one decision of four policies, seen by the counter.
    const idle = await commandsRun(redis.shared);
    expect((await get('/three', '203.0.113.1')).status).toBe(200);
    expect((await commandsRun(redis.shared)) - idle).toBeGreaterThan(0);
    await redis.shared.flushall();
    const before = await commandsRun(redis.shared);
    const responses = [
      ...(await all(100, '/three', (i) => `10.${i}.0.1`)),
      ...(await all(100, '/three', (i) => `2001:db8:a:${i.toString(16)}::1`)),
    ];
    expect(responses.map((r) => r.status)).toEqual(Array(200).fill(200));
    expect(responses.every((r) => r.headers['ratelimit'] === undefined)).toBe(true);
    expect((await commandsRun(redis.shared)) - before).toBe(0);
    expect(await redis.shared.dbsize()).toBe(0);
  });

  it('100 concurrent denied requests, by the module and by a policy: all 403, no Redis command', async () => {
    await start({ deny: ['198.51.100.0/24', '2001:db8:d::/48'] });
    const before = await commandsRun(redis.shared);
    const responses = [
      ...(await all(50, '/three', (i) => `198.51.100.${i}`)),
      ...(await all(25, '/three', (i) => `2001:db8:d:${i}::1`)),
      ...(await all(25, '/signup', (i) => `192.0.2.${i}`)),
    ];
    expect(responses.map((r) => r.status)).toEqual(Array(100).fill(403));
    expect(responses.map((r) => r.body.code)).toEqual(Array(100).fill('RATE_LIMIT_DENY_LIST'));
    expect((await commandsRun(redis.shared)) - before).toBe(0);
    // No state: only the policies the instance recorded at start.
    expect(await redis.shared.keys('*')).toEqual(['rl:policies']);
  });

  it('a throwing list function of a fail-closed policy: 503, no Redis command', async () => {
    await start({});
    const before = await commandsRun(redis.shared);
    const responses = await all(20, '/closed', (i) => `203.0.113.${i}`);
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(503));
    expect(responses.map((r) => r.body.code)).toEqual(Array(20).fill('RATE_LIMIT_UNAVAILABLE'));
    expect((await commandsRun(redis.shared)) - before).toBe(0);
  });

  it('with lists configured, clients not on them are still admitted exactly: 100 of 200 at limit 100', async () => {
    await start({ allow: ['10.0.0.0/8'], deny: ['198.51.100.0/24', async () => false] });
    const statuses = (await all(200, '/flood', () => '203.0.113.77')).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);
  });
});
