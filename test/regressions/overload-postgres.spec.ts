import type { INestApplication } from '@nestjs/common';

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
