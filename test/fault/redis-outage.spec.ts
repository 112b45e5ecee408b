import { type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { IOREDIS, REDIS_CLIENTS, type RedisClientKind, type TestRedisClient } from '../support/redis-clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { TEST_START_MS } from '../support/time.js';

const TIMEOUT_MS = 100;
/** Requests sent at once while Redis is paused. */
const IN_FLIGHT = 50;

/** The module's connection from a URL, or from a client of the app's (of one package). */
type Connection = 'module connection' | RedisClientKind;

/**
 * Both adapters through the URL and an ioredis client; every other client package on one adapter (what a
 * client changes is below the adapter).
 */
const CASES: [AdapterName, Connection][] = [
  ...ADAPTERS.flatMap((adapter): [AdapterName, Connection][] => [
    [adapter, 'module connection'],
    [adapter, IOREDIS],
  ]),
  ...REDIS_CLIENTS.filter((kind) => kind !== IOREDIS).map((kind): [AdapterName, Connection] => ['express', kind]),
];
const named = (connection: Connection) =>
  connection === 'module connection' ? connection : `your ${connection.name} client`;

describe.each(CASES.map(([adapter, connection]) => ({ adapter, connection, through: named(connection) })))(
  'Redis outages on $adapter through $through',
  ({ adapter, connection }) => {
    let redis: TestRedis;
    let app: INestApplication;
    let client: TestRedisClient | undefined;
    const failures: string[] = [];
    /** The name of each failure's error: how each request that failed was answered. */
    const errors: string[] = [];

    beforeEach(async () => {
      failures.length = 0;
      errors.length = 0;
      redis = await startRedis();
      client = connection === 'module connection' ? undefined : await connection.standalone(redis.port);
      const options: RateLimitModuleOptions = {
        redis: client === undefined ? { url: redis.url } : { client: client.client },
        timeout: TIMEOUT_MS,
        onError: (error, policy) => {
          failures.push(policy);
          errors.push(error.name);
        },
      };
      ({ app } = await createApp(
        adapter,
        { imports: [RateLimitModule.forRoot(options)], controllers: [FailModeController] },
        new FakeClock(TEST_START_MS),
      ));
    });
    afterEach(async () => {
      await app.close();
      await client?.close();
      await redis.stop();
    });

    async function timed(path: string): Promise<{ status: number }> {
      const res = await request(app.getHttpServer()).get(path);
      return { status: res.status };
    }
    const count = (name: string) => errors.filter((e) => e === name).length;

    it('killed: fail open stays up, fail closed stays shut, nothing waits; restarted: limits come back, counted right', async () => {
      for (let i = 0; i < 3; i++) expect((await timed('/closed')).status).toBe(200);
      redis.process.kill('SIGKILL');
      await new Promise((resolve) => redis.process.once('exit', resolve));
      for (let i = 0; i < 20; i++) {
        const open = await timed('/open');
        const closed = await timed('/closed');
        expect([open.status, closed.status]).toEqual([200, 503]);
      }
      expect(failures).toEqual(expect.arrayContaining(['open', 'closed']));
      expect(errors.length).toBe(40);
      if (connection !== 'module connection' && connection.holdsWhileReconnecting === true) {
        // GLIDE cannot be told to fail a request while it reconnects: the first calls wait for the timeout (no
        // longer), then the breaker answers without a store call.
        expect(count('RateLimitStoreTimeoutError')).toBeGreaterThan(0);
        expect(count('RateLimitStoreTimeoutError') + count('RateLimitCircuitOpenError')).toBe(errors.length);
        expect(count('RateLimitCircuitOpenError')).toBeGreaterThan(errors.length / 2);
      } else {
        // Nothing waited for a server that is gone: no call ran into the timeout, each failed at once.
        expect(count('RateLimitStoreTimeoutError')).toBe(0);
      }

      const port = redis.port;
      await redis.stop();
      redis = await startRedis({ port });
      // The restarted Redis is empty (no persistence): the first request it admits starts the count again.
      await waitFor(async () => (await timed('/closed')).status === 200, 'the limiter to answer again', 8000);
      const after = [];
      for (let i = 0; i < 6; i++) after.push((await timed('/closed')).status);
      expect(after).toEqual([200, 200, 200, 200, 429, 429]);
    });

    it('hung (SIGSTOP): of 500 requests, only the first 50 in flight wait for the timeout; SIGCONT: it recovers', async () => {
      expect((await timed('/closed')).status).toBe(200);
      redis.process.kill('SIGSTOP');
      const statuses = new Set<string>();
      for (let batch = 0; batch < 10; batch++) {
        const results = await Promise.all(
          Array.from({ length: IN_FLIGHT }, (_, i) => timed(i % 2 === 0 ? '/open' : '/closed')),
        );
        for (const r of results) statuses.add(String(r.status));
      }
      expect([...statuses].sort()).toEqual(['200', '503']);
      // Each request was answered by the timeout (no hang) or, once the breaker opened, without a store call.
      expect(errors.length).toBe(10 * IN_FLIGHT);
      expect(count('RateLimitStoreTimeoutError')).toBeGreaterThan(0);
      expect(count('RateLimitStoreTimeoutError')).toBeLessThanOrEqual(IN_FLIGHT);
      expect(count('RateLimitCircuitOpenError')).toBe(errors.length - count('RateLimitStoreTimeoutError'));
      redis.process.kill('SIGCONT');
      await waitFor(async () => (await timed('/closed')).status !== 503, 'the limiter to answer again', 8000);
      expect((await timed('/open')).status).toBe(200);
    });

    it('SCRIPT FLUSH and FLUSHALL between requests fail no request', async () => {
      const admin = redis.client();
      for (let i = 0; i < 4; i++) {
        expect((await timed('/closed')).status).toBe(200);
        await admin.script('FLUSH');
      }
      await admin.flushall();
      for (let i = 0; i < 5; i++) {
        expect((await timed('/closed')).status).toBe(200);
        await admin.script('FLUSH');
      }
      expect((await timed('/closed')).status).toBe(429);
      expect(failures).toEqual([]);
    });
  },
);
