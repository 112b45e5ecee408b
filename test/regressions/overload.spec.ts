import type { INestApplication } from '@nestjs/common';

import { flood, FLOOD, gcraBound, HEALTHY_FLOOD, startOverloadApp } from '../support/overload.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

const TIMEOUT_MS = 100;
/** Slack for a saturated loop (every answer queues behind ~1,000 others) and a heavy handler's stall. */
const MARGIN_MS = 1500;

/**
 * Regression: an app saturated by its own traffic turned the limiter off. The timeout timer fired while the
 * event loop was busy, before Redis' reply (already arrived) was read; five such "timeouts" opened the
 * breaker and every fail-open policy admitted everything (one key got 54 requests of a 5-per-minute GCRA), and
 * fail-closed routes answered 503 with Redis healthy.
 */
describe('an app overloaded by its own traffic', () => {
  let redis: TestRedis;
  let app: INestApplication;
  let port: number;
  let serverSide: { slowestMs: number };
  const failures: string[] = [];

  beforeEach(async () => {
    failures.length = 0;
    redis = await startRedis();
    ({ app, port, serverSide } = await startOverloadApp({
      redis: { url: redis.url },
      timeout: TIMEOUT_MS,
      onError: (_error, policy) => failures.push(policy),
    }));
  });
  afterEach(async () => {
    await app.close();
    await redis.stop();
  });
  const floodHealthy = (path: string) => flood(port, path, HEALTHY_FLOOD);

  describe('on a healthy Redis', () => {
    it('decides every request by the store: per-key admissions within the GCRA bound, no fail-mode decision', async () => {
      const result = await floodHealthy('/open');
      const bound = gcraBound(result.durationMs);

      expect(result.errors).toBe(0);
      expect(result.sent).toBeGreaterThan(bound * FLOOD.keys); // every key was offered more than it may pass
      expect(failures).toEqual([]);
      expect(Math.max(...result.admitted.values())).toBeLessThanOrEqual(bound);
      expect([...result.byStatus.keys()].sort()).toEqual([200, 429]);
    }, 120_000);

    it('never answers 503 on a fail-closed policy while the store answers', async () => {
      const result = await floodHealthy('/closed');

      expect(result.errors).toBe(0);
      expect(result.sent).toBeGreaterThan(gcraBound(result.durationMs) * FLOOD.keys);
      expect(failures).toEqual([]);
      expect([...result.byStatus.keys()].sort()).toEqual([200, 429]);
      expect(Math.max(...result.admitted.values())).toBeLessThanOrEqual(gcraBound(result.durationMs));
    }, 120_000);
  });

  describe('with Redis paused (SIGSTOP)', () => {
    it.each([
      ['/open', 200],
      ['/closed', 503],
    ])(
      '%s: every request gets its fail mode, none waits longer than the timeout and a margin',
      async (path, status) => {
        redis.process.kill('SIGSTOP');
        const result = await flood(port, path, FLOOD);
        redis.process.kill('SIGCONT');

        expect(result.errors).toBe(0);
        expect([...result.byStatus]).toEqual([[status, result.sent]]);
        expect(failures.length).toBe(result.sent);
        expect(serverSide.slowestMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
      },
      60_000,
    );
  });
});
