import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { emissionUs, gcraRatePerWindow } from '../../lib/policy/emission.js';
import { RateLimit, type RateLimitDuration, RateLimitModule, validatePolicy } from '../../lib/index.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Regression: GCRA counts time in whole microseconds and rounds its emission interval up, so a limit of
// 800,000 a second (one request every 1.25 µs, taken as 2 µs) admitted only 500,000 a second once its burst was
// spent: a declared limit silently enforced 37.5% lower. Such a limit is now refused at start (naming
// Class.method), and a per-plan limit function that returns one is a bad value, as any other.

describe('a GCRA limit its whole-µs emission interval cannot hold', () => {
  it('is refused, naming the limit, what it would admit and the way out', () => {
    expect(() => validatePolicy({ name: 'hot', algorithm: 'gcra', limit: 800_000, window: '1s' })).toThrow(
      'Invalid rate-limit policy "hot", field "limit": gcra counts time in whole microseconds: 800000 per 1000 ms ' +
        'is one request every 1.25 µs, rounded up to 2 µs, which admits only 500000 per window (37.5% below the ' +
        'limit). Use token-bucket, which is exact at any rate, or a limit that divides 1000000',
    );
    // 30,000 a second: 33.33 µs taken as 34 µs, 29,411.8 a second (2% short)
    expect(() => validatePolicy({ algorithm: 'gcra', limit: 30_000, window: '1s' })).toThrow(/field "limit".*2\.0%/);
    // the token bucket counts in units of 1/windowMs: exact at any rate
    expect(validatePolicy({ algorithm: 'token-bucket', limit: 800_000, window: '1s' }).limit).toBe(800_000);
  });

  it.each<[number, RateLimitDuration]>([
    [500_000, '1s'], // divides 1,000,000: exact
    [1_000_000, '1s'],
    [10_000, '1s'],
    [7, '1s'], // 142,857.14 µs taken as 142,858: 0.0006% below
    [3_000, '1s'], // 333.3 µs taken as 334: 0.2% below
  ])('is kept within 1%% of the limit: %i per %s passes', (limit, window) => {
    const policy = validatePolicy({ algorithm: 'gcra', limit, window });
    expect(gcraRatePerWindow(limit, policy.windowMs)).toBeGreaterThanOrEqual(limit * 0.99);
  });

  it("applies to the local limit too: the local fallback decides GCRA at that rate (failMode 'local')", () => {
    const local = { algorithm: 'gcra', limit: 1_000_000, window: '1s', failMode: 'local' } as const;
    expect(() => validatePolicy({ ...local, name: 'hot', localLimit: 800_000 })).toThrow(
      /^Invalid rate-limit policy "hot", field "localLimit": gcra counts time in whole microseconds: 800000 per/,
    );
    expect(validatePolicy({ ...local, localLimit: 500_000 }).localLimit).toBe(500_000);
  });

  it('the rounding is what the step uses: 800,000 per 5 s would lose 10.7%, and is refused', () => {
    expect(emissionUs(800_000, 5000)).toBe(7);
    expect(() => validatePolicy({ algorithm: 'gcra', limit: 800_000, window: '5s' })).toThrow(/10\.7% below/);
  });

  it('stops the start of an app that declares one, naming Class.method', async () => {
    @Controller('hot')
    class HotController {
      @Get()
      @RateLimit({ name: 'hot', algorithm: 'gcra', limit: 800_000, window: '1s' })
      handler() {
        return 'never';
      }
    }
    const compiling = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({})],
      controllers: [HotController],
    }).compile();
    await expect(compiling).rejects.toThrow(
      /^Invalid rate-limit policy "hot" \(declared on HotController\.handler\), field "limit": gcra counts time/,
    );
  });

  describe('a per-plan limit function that returns one (Redis store)', () => {
    @Controller('plan')
    class PlanController {
      @Get('open')
      @RateLimit({ name: 'plan-open', algorithm: 'gcra', limit: planLimit, window: '1s', failMode: 'open' })
      open() {
        return 'ok';
      }

      @Get('closed')
      @RateLimit({ name: 'plan-closed', algorithm: 'gcra', limit: planLimit, window: '1s', failMode: 'closed' })
      closed() {
        return 'ok';
      }
    }

    let redis: TestRedis;
    let app: INestApplication;
    const errors: [string, string][] = [];
    beforeAll(async () => {
      redis = await startRedis();
      const moduleRef = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({
            redis: { url: redis.url },
            onError: (error, policy) => errors.push([policy, error.message]),
          }),
        ],
        controllers: [PlanController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });
    afterAll(async () => {
      await app?.close();
      await redis?.stop();
    });

    it('is a failure of that policy: its fail mode applies, and onError says why', async () => {
      const get = (path: string) => request(app.getHttpServer()).get(path);
      expect((await get('/plan/open?plan=800000')).status).toBe(200);
      expect((await get('/plan/closed?plan=800000')).status).toBe(503);
      expect(errors).toEqual([
        ['plan-open', expect.stringMatching(/field "limit": the limit function returned a bad value: gcra counts/)],
        ['plan-closed', expect.stringMatching(/field "limit": the limit function returned a bad value: gcra counts/)],
      ]);
      // a limit it can hold is decided by the store as ever
      expect((await get('/plan/closed?plan=500000')).status).toBe(200);
      expect(errors).toHaveLength(2);
    });
  });
});

/** The caller's plan: the `plan` query parameter. */
function planLimit(ctx: { switchToHttp(): { getRequest<T>(): T } }): number {
  return Number(ctx.switchToHttp().getRequest<{ query: { plan?: string } }>().query.plan);
}
