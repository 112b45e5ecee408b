import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import {
  RateLimit,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { redisForSpec, startRedis } from '../support/redis-server.js';
import { decisionCalls } from '../support/redis-commands.js';
import { alignedStart } from '../support/time.js';

const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
const REDUCED_CAPACITY = 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';
const PROBLEM_JSON = /^application\/problem\+json(;|$)/;

const rowsOf: Exclude<RateLimitPolicy['cost'], number | undefined> = (ctx) =>
  Number(ctx.switchToHttp().getRequest<{ query: Record<string, string | undefined> }>().query.rows ?? 1);

@Controller()
class ProblemController {
  @Get('one')
  @RateLimit({ name: 'one', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip' })
  one() {
    return { ok: true };
  }

  @Get('both')
  @RateLimit([
    { name: 'burst', algorithm: 'token-bucket', limit: 1, window: '10s', key: 'ip' },
    { name: 'minute', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' },
  ])
  both() {
    return { ok: true };
  }

  @Get('mixed')
  @RateLimit([
    { name: 'wide', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' },
    { name: 'narrow', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' },
  ])
  mixed() {
    return { ok: true };
  }

  @Get('export')
  @RateLimit({ name: 'rows', algorithm: 'gcra', limit: 10, window: '1m', key: 'ip', cost: rowsOf })
  export() {
    return { ok: true };
  }

  @Get('thrown')
  thrown() {
    // what an application throws after its own RateLimitService.consume()
    throw new RateLimitExceededException({
      allowed: false,
      policy: 'export-daily',
      limit: 10,
      remaining: 0,
      resetMs: 4_500,
      retryAfterMs: 4_500,
    });
  }

  @Get('closed')
  @RateLimit({ name: 'closed', algorithm: 'fixed-window', limit: 10, window: '1m', key: 'ip', failMode: 'closed' })
  closed() {
    return { ok: true };
  }
}

let prefixes = 0;

async function appWith(adapter: AdapterName, options: RateLimitModuleOptions): Promise<INestApplication> {
  const { app } = await createApp(
    adapter,
    {
      imports: [RateLimitModule.forRoot({ keyPrefix: `problem-${adapter}-${++prefixes}:`, ...options })],
      controllers: [ProblemController],
    },
    new FakeClock(alignedStart(60_000)),
  );
  await app.listen(0, '127.0.0.1');
  return app;
}

describe.each(ADAPTERS)('problem details (errors: "problem") on %s', (adapter) => {
  const redis = redisForSpec();

  describe.each(['memory', 'redis'] as const)('with the %s store', (store) => {
    let app: INestApplication;
    beforeEach(async () => {
      app = await appWith(adapter, {
        errors: 'problem',
        ...(store === 'redis' ? { redis: { url: redis.url } } : {}),
      });
    });
    afterEach(() => app.close());
    const get = (path: string) => request(app.getHttpServer()).get(path);

    it('a 429 is application/problem+json of type quota-exceeded, naming the policy, with retryAfter', async () => {
      expect((await get('/one')).status).toBe(200);
      expect((await get('/one')).status).toBe(200);
      const res = await get('/one');
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.body).toEqual({
        type: QUOTA_EXCEEDED,
        title: 'Quota Exceeded',
        status: 429,
        detail: 'Rate limit "one" exceeded; retry in 60 s',
        'violated-policies': ['one'],
        retryAfter: 60,
      });
      // the header fields are those of every 429
      expect(res.headers['retry-after']).toBe('60');
      expect(res.headers['ratelimit']).toBe('"one";r=0;t=60');
      expect(res.headers['ratelimit-policy']).toBe('"one";q=2;w=60');
    });

    it('two denying policies: both in violated-policies, in the route order; detail and retryAfter the longest wait', async () => {
      expect((await get('/both')).status).toBe(200);
      const res = await get('/both');
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.body).toEqual({
        type: QUOTA_EXCEEDED,
        title: 'Quota Exceeded',
        status: 429,
        detail: 'Rate limit "minute" exceeded; retry in 60 s',
        'violated-policies': ['burst', 'minute'],
        retryAfter: 60,
      });
      expect(res.headers['retry-after']).toBe('60');
    });

    it('violated-policies names the policies that denied, not every policy of the route', async () => {
      expect((await get('/mixed')).status).toBe(200);
      const res = await get('/mixed');
      expect(res.status).toBe(429);
      expect(res.body['violated-policies']).toEqual(['narrow']);
      expect(res.headers['ratelimit']).toBe('"wide";r=4;t=60, "narrow";r=0;t=60');
    });

    it('a cost that can never fit: no retryAfter member and no Retry-After', async () => {
      const res = await get('/export?rows=11');
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.headers['retry-after']).toBeUndefined();
      expect(res.body).toEqual({
        type: QUOTA_EXCEEDED,
        title: 'Quota Exceeded',
        status: 429,
        detail: expect.stringMatching(/cost 11 is larger than the capacity 10 .* can never be allowed/),
        'violated-policies': ['rows'],
      });
      expect(res.body).not.toHaveProperty('retryAfter');
    });
  });

  describe('on Redis, the local cache of denials', () => {
    let app: INestApplication;
    beforeEach(async () => {
      app = await appWith(adapter, { errors: 'problem', redis: { url: redis.url } });
    });
    afterEach(() => app.close());
    const get = (path: string) => request(app.getHttpServer()).get(path);

    it('a 429 answered from the cache has the same body and content type as the one Redis decided', async () => {
      const admin = redis.client();
      await get('/one');
      await get('/one');
      const fromStore = await get('/one');
      const before = await decisionCalls(admin);
      const fromCache = await get('/one');
      expect(await decisionCalls(admin)).toBe(before); // Redis was not asked
      expect(fromStore.status).toBe(429);
      expect(fromCache.status).toBe(429);
      expect(fromCache.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(fromCache.body).toEqual(fromStore.body);
      expect(fromCache.body['violated-policies']).toEqual(['one']);
      expect(fromCache.headers['retry-after']).toBe(fromStore.headers['retry-after']);
    });

    it('with two denying policies, the cached 429 still names both', async () => {
      const admin = redis.client();
      await get('/both');
      const fromStore = await get('/both');
      const before = await decisionCalls(admin);
      const fromCache = await get('/both');
      expect(await decisionCalls(admin)).toBe(before);
      expect(fromStore.body['violated-policies']).toEqual(['burst', 'minute']);
      expect(fromCache.body).toEqual(fromStore.body);
    });
  });

  it('a 503 of a fail-closed policy with Redis stopped is of type temporary-reduced-capacity', async () => {
    const own = await startRedis();
    const app = await appWith(adapter, { errors: 'problem', redis: { url: own.url }, timeout: 100 });
    try {
      expect((await request(app.getHttpServer()).get('/closed')).status).toBe(200);
      own.process.kill('SIGKILL');
      await new Promise((resolve) => own.process.once('exit', resolve));
      const res = await request(app.getHttpServer()).get('/closed');
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toEqual({
        type: REDUCED_CAPACITY,
        title: 'Temporary Reduced Capacity',
        status: 503,
        detail: 'Rate limiter unavailable; policy "closed" fails closed',
        'violated-policies': ['closed'],
        retryAfter: 1,
      });
    } finally {
      await app.close();
      await own.stop();
    }
  });

  it("a RateLimitExceededException of the application's own gets the same problem body", async () => {
    const app = await appWith(adapter, { errors: 'problem' });
    try {
      const res = await request(app.getHttpServer()).get('/thrown');
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toEqual({
        type: QUOTA_EXCEEDED,
        title: 'Quota Exceeded',
        status: 429,
        detail: 'Rate limit "export-daily" exceeded; retry in 5 s',
        'violated-policies': ['export-daily'],
        retryAfter: 5,
      });
    } finally {
      await app.close();
    }
  });

  it('the default (errors unset, or "nest") keeps the Nest body as application/json', async () => {
    for (const errors of [undefined, 'nest'] as const) {
      const app = await appWith(adapter, { errors });
      try {
        await request(app.getHttpServer()).get('/one');
        await request(app.getHttpServer()).get('/one');
        const res = await request(app.getHttpServer()).get('/one');
        expect(res.status).toBe(429);
        expect(res.headers['content-type']).toMatch(/^application\/json(;|$)/);
        expect(res.body).toEqual({
          statusCode: 429,
          error: 'Too Many Requests',
          code: 'RATE_LIMITED',
          message: 'Rate limit "one" exceeded; retry in 60 s',
          policy: 'one',
          retryAfter: 60,
        });
      } finally {
        await app.close();
      }
    }
  });

  it('a bad errors value stops the start with an error naming the option', async () => {
    await expect(
      appWith(adapter, { errors: 'rfc9457' as unknown as RateLimitModuleOptions['errors'] }),
    ).rejects.toThrow(`nest-rate-limit: option "errors" must be 'nest' or 'problem', got "rfc9457"`);
  });
});
