import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';

import { RateLimitModule, RateLimitService } from '../../lib/index.js';

import { flood, gcraBound, HEALTHY_FLOOD, startOverloadApp } from '../support/overload.js';
import { createTestSchema, type TestSchema } from '../support/postgres.js';

/**
 * Regression: on PostgreSQL, an app saturated by its own traffic refused consumes (their fail mode) with the
 * database healthy: the batcher counted a queued request's wait from the moment it came, including the time
 * the loop spent on other requests before reading the reply of the statement it waited for (78 "waited 100 ms
 * for a statement" failures in a 10 s flood). The flood and bounds are the Redis overload test's (test/support/overload.ts).
 */
const TIMEOUT_MS = 100;

describe('an app overloaded by its own traffic, on PostgreSQL', () => {
  let db: TestSchema;
  let app: INestApplication;
  let port: number;
  const failures: string[] = [];
  const messages = new Set<string>();

  beforeAll(async () => {
    db = await createTestSchema();
    ({ app, port } = await startOverloadApp({
      postgres: { pool: db.pool, schema: db.schema, migrate: true },
      timeout: TIMEOUT_MS,
      onError: (error, policy) => {
        failures.push(policy);
        messages.add(error instanceof Error ? error.message : String(error));
      },
    }));
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('decides every request by the store: per-key admissions within the GCRA bound, no fail-mode decision', async () => {
    const result = await flood(port, '/open', HEALTHY_FLOOD);
    expect(result.errors).toBe(0);
    expect(result.sent).toBeGreaterThan(gcraBound(result.durationMs) * HEALTHY_FLOOD.keys);
    expect([...messages]).toEqual([]);
    expect(failures).toEqual([]);
    expect(Math.max(...result.admitted.values())).toBeLessThanOrEqual(gcraBound(result.durationMs));
  }, 120_000);
});

/**
 * Regression (CI, overload on PostgreSQL: "a PostgreSQL consume waited 100 ms for a statement"): a statement
 * carried 64 requests at most, so requests beyond what two statements hold waited in the store's queue, and
 * their wait — and the module's timeout — counted the time the loop then spent on other work. When the loop
 * was busy for longer than the timeout, the replies (long arrived) were read, the next statements went out,
 * and in the same turn the requests still queued were refused and the ones just sent timed out: fail modes
 * with the database healthy.
 */
const DEEP = { name: 'deep', algorithm: 'gcra', limit: 5, window: '1h', failMode: 'closed' } as const;

describe('a deep queue of consumes on PostgreSQL, and a loop busy for longer than the timeout', () => {
  let db: TestSchema;
  let app: INestApplication;
  const failures: string[] = [];

  beforeAll(async () => {
    db = await createTestSchema();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          postgres: { pool: db.pool, schema: db.schema, migrate: true },
          timeout: TIMEOUT_MS,
          onError: (error) => failures.push(error.message),
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('decides every request by the store: the busy time is the app’s, not the store’s', async () => {
    const service = app.get(RateLimitService);
    await service.consume(DEEP, 'warm-up'); // the pool's connections are open
    for (let round = 0; round < 3; round++) {
      // 400 consumes in one turn: more than two statements hold, on keys of their own
      const decided = Array.from({ length: 400 }, (_, i) => service.consume(DEEP, `r${round}:${i}`));
      await new Promise<void>((resolve) => setImmediate(resolve));
      // the first statements are out; the loop is busy for longer than the timeout
      const until = performance.now() + 1.5 * TIMEOUT_MS;
      while (performance.now() < until);
      const decisions = await Promise.all(decided);
      expect(decisions.filter((d) => !d.allowed)).toEqual([]);
    }
    expect(failures).toEqual([]);
  });
});
