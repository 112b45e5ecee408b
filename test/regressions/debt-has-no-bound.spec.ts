import { Controller, HttpCode, type INestApplication, Post } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitPolicy, RateLimitService, validatePolicy } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import type { FakeClock } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createApp } from '../support/nest-app.js';
import { STORES, storeOptions, storeServers } from '../support/store-options.js';

// Regression (issue 41, finding 5): a settle function that returned Number.MAX_SAFE_INTEGER (bytes counted for
// tokens) was charged whole: Retry-After of 142 years (token bucket) or 71 years (GCRA), cleared only by a
// reset. A key now owes at most one capacity past its own (DEBT_CAP_CAPACITIES): the stores clamp the state
// there, and the actual cost is clamped where it is given, reported once per policy.

const TENANT = 'sk-live-tenant-7';
const servers = storeServers();

const policyOf = (algorithm: 'token-bucket' | 'gcra'): RateLimitPolicy => ({
  name: `ai-${algorithm}`,
  algorithm,
  limit: 1000,
  window: '1m',
  key: () => TENANT,
  cost: 100,
  settle: () => Number.MAX_SAFE_INTEGER,
});

@Controller('ai')
class AiController {
  @Post('bucket')
  @HttpCode(200)
  @RateLimit(policyOf('token-bucket'))
  bucket(): string {
    return 'answered';
  }

  @Post('gcra')
  @HttpCode(200)
  @RateLimit(policyOf('gcra'))
  gcra(): string {
    return 'answered';
  }
}

describe.each(STORES)('a settlement far past the limit on the %s store', (store) => {
  let app: INestApplication;
  let clock: FakeClock;
  let logger: CapturingLogger;
  beforeEach(async () => {
    logger = new CapturingLogger();
    ({ app, clock } = await createApp(
      'express',
      { imports: [RateLimitModule.forRoot(storeOptions(store, servers))], controllers: [AiController] },
      undefined,
      { logger },
    ));
  });
  afterEach(() => app.close());

  describe.each(['token-bucket', 'gcra'] as const)('of a %s', (algorithm) => {
    const path = algorithm === 'token-bucket' ? '/ai/bucket' : '/ai/gcra';
    const declared = validatePolicy(policyOf(algorithm));

    it("owes one capacity at most: the next denial's Retry-After is within the policy's maximum wait", async () => {
      expect((await request(app.getHttpServer()).post(path)).status).toBe(200);
      await app.get(RateLimiter).refundsSettled();
      const denied = await request(app.getHttpServer()).post(path);
      expect(denied.status).toBe(429);
      // 2000 tokens taken (the debt cap), 100 fit once 1100 have drained: 66 s
      expect(denied.headers['retry-after']).toBe('66');
      expect(Number(denied.headers['retry-after']) * 1000).toBeLessThanOrEqual(maxWaitMs(declared));
      clock.advance(66_000);
      expect((await request(app.getHttpServer()).post(path)).status).toBe(200);
    });

    it('clamps the actual cost where it is given and says so once per policy, naming Class.method, never the key', async () => {
      for (let i = 0; i < 2; i++) {
        await request(app.getHttpServer()).post(path);
        await app.get(RateLimiter).refundsSettled();
        clock.advance(120_000);
      }
      const handler = algorithm === 'token-bucket' ? 'bucket' : 'gcra';
      const clamped = logger.find('warn', /the actual cost 9007199254740991/);
      expect(clamped).toHaveLength(1);
      expect(clamped[0]?.message).toContain(`Policy "ai-${algorithm}" on AiController.${handler}`);
      expect(clamped[0]?.message).toContain('so 2100 is charged instead');
      expect(logger.lines.join('\n')).not.toContain(TENANT);
    });
  });

  it.each(['token-bucket', 'gcra'] as const)(
    '%s: reserve().settle(Number.MAX_SAFE_INTEGER) leaves a wait within the maximum',
    async (algorithm) => {
      const service = app.get(RateLimitService);
      const policy: RateLimitPolicy = { name: `reserved-${algorithm}`, algorithm, limit: 1000, window: '1m' };
      const reservation = await service.reserve([{ policy, key: TENANT, cost: 100 }]);
      await reservation.settle(Number.MAX_SAFE_INTEGER);
      const denied = await service.consume(policy, TENANT, { cost: 100 });
      expect(denied).toMatchObject({ allowed: false, retryAfterMs: 66_000 });
      expect(denied.retryAfterMs).toBeLessThanOrEqual(maxWaitMs(validatePolicy(policy)));
      expect(
        logger.find('warn', /RateLimitService\.reserve\(\)\.settle: the actual cost 9007199254740991/),
      ).toHaveLength(1);
    },
  );
});
