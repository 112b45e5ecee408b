import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { RateLimitStoreTimeoutError } from '../../lib/stores/store-timeout.js';
import { ALGORITHMS, type RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { heldInFlight, policyOf } from '../support/policies.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { Gate, waitFor } from '../support/wait.js';
import { TEST_START_MS } from '../support/time.js';

const gate = new Gate();

function floodController(algorithm: RateLimitAlgorithm) {
  @Controller()
  class FloodController {
    @Get('flood')
    @RateLimit(policyOf(algorithm, { name: `flood-${algorithm}`, limit: 100, window: '1m', key: 'ip' }))
    async flood() {
      if (heldInFlight(algorithm)) await gate.pass();
      return 'ok';
    }
  }
  return FloodController;
}

describe.each(ADAPTERS)('on Redis, through HTTP, on %s', (adapter) => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis.stop());

  it.each(ALGORITHMS)(
    '%s: 200 parallel requests at 100 per minute get exactly 100 × 200 and 100 × 429',
    async (algorithm) => {
      const { app } = await createApp(
        adapter,
        {
          // A generous timeout: 200 decisions at once on 2 shared cores must not fall into the fail mode here.
          imports: [RateLimitModule.forRoot({ redis: { url: redis.url }, keyPrefix: `${adapter}:`, timeout: 2000 })],
          controllers: [floodController(algorithm)],
        },
        new FakeClock(TEST_START_MS),
      );
      await app.listen(0, '127.0.0.1');
      let answered = 0;
      const responses = Promise.all(
        Array.from({ length: 200 }, () =>
          request(app.getHttpServer())
            .get('/flood')
            .then((response) => {
              answered++;
              return response;
            }),
        ),
      );
      // A concurrency limit counts requests in flight: the admitted ones stay in their handler until every
      // request is decided (else each would give its unit back as it ends, and more than 100 would pass).
      if (heldInFlight(algorithm)) {
        await waitFor(() => gate.held + answered === 200, 'every request admitted or denied');
        gate.open();
      }
      const statuses = await responses;
      const counts = statuses.reduce<Record<number, number>>(
        (acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }),
        {},
      );
      expect(counts).toEqual({ 200: 100, 429: 100 });
      await app.close();
    },
  );
});

describe.each(ADAPTERS)('with the limiter down, on %s', (adapter) => {
  let redis: TestRedis;
  let app: INestApplication;
  const errors: string[] = [];
  const reasons: unknown[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    ({ app } = await createApp(adapter, {
      imports: [
        RateLimitModule.forRoot({
          redis: { url: redis.url },
          timeout: 100,
          onError: (error, policy) => {
            errors.push(policy);
            reasons.push(error);
          },
        }),
      ],
      controllers: [FailModeController],
    }));
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  const statusOf = async (path: string): Promise<number> => (await request(app.getHttpServer()).get(path)).status;

  it('a fail-open route answers 200 and a fail-closed route 503, none waiting for the dead Redis', async () => {
    expect(await statusOf('/open')).toBe(200);
    expect(await statusOf('/closed')).toBe(200);
    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    for (let i = 0; i < 5; i++) {
      expect([await statusOf('/open'), await statusOf('/closed')]).toEqual([200, 503]);
    }
    expect(errors).toEqual(expect.arrayContaining(['open', 'closed']));
    // Nothing waited for Redis: every call failed at once (the connection refused, then the open breaker),
    // none by its timeout (counted, not timed: a loaded machine slows the round trip, not this).
    expect(reasons.filter((error) => error instanceof RateLimitStoreTimeoutError)).toEqual([]);
  });
});
