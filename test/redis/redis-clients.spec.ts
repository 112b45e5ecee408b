import { RateLimitModule, RedisRateLimitStore } from '../../lib/index.js';
import type { RateLimitStoreChange } from '../../lib/stores/engine-store.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createApp, statusesOf } from '../support/nest-app.js';
import { REDIS_CLIENTS, type TestRedisClient } from '../support/redis-clients.js';
import { startCluster, type TestCluster } from '../support/redis-cluster.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// What an app of each client package sees: `redis: { client }` starts the module on a connection of its own
// made from the client, deciding real requests, on a standalone Redis and on a Cluster; and the store's feed of
// changes, which subscribes on a connection of its own, delivers and notices a lost connection.

let redis: TestRedis;
let cluster: TestCluster;
beforeAll(async () => {
  [redis, cluster] = await Promise.all([startRedis(), startCluster()]);
});
afterAll(async () => {
  await Promise.all([redis.stop(), cluster.stop()]);
});

describe.each(REDIS_CLIENTS)('through a $name client', (kind) => {
  describe.each(['standalone', 'cluster'] as const)('on a %s Redis', (topology) => {
    let given: TestRedisClient;
    beforeEach(async () => {
      given = topology === 'standalone' ? await kind.standalone(redis.port) : await kind.cluster(cluster.ports);
    });
    afterEach(() => given.close());

    it('RateLimitModule.forRoot({ redis: { client } }) decides real requests on a connection of its own', async () => {
      const logger = new CapturingLogger();
      const keyPrefix = `start-${kind.name.replace(/\W/g, '')}:`;
      const { app } = await createApp(
        'express',
        {
          // A generous timeout: this is not an outage test, and a store call of a long run in one process on 2
          // shared cores once took longer than the default 100 ms (CI, 2026-12-05: a 503 from /closed).
          imports: [RateLimitModule.forRoot({ redis: { client: given.client }, keyPrefix, timeout: 2000 })],
          controllers: [FailModeController],
        },
        undefined,
        { logger },
      );
      // With the errors logged, so that a failure says what the store did.
      const statuses = await statusesOf(app, '/closed', 6);
      expect({ statuses, errors: logger.find('error', /./).map((e) => e.message) }).toEqual({
        statuses: [200, 200, 200, 200, 200, 429],
        errors: [],
      });
      const where = topology === 'standalone' ? `Redis at 127.0.0.1:${redis.port}` : 'a Redis Cluster (127.0.0.1:';
      expect(logger.find('log', /^Rate limits in /).map((e) => e.message)).toEqual([expect.stringContaining(where)]);
      await app.close();
      // The app's client was left as it was, and still works.
      const store = new RedisRateLimitStore({ client: given.client, keyPrefix });
      expect(String(await store.ping()).toUpperCase()).toBe('PONG');
      expect(await store.resetAll()).toBe(1);
    });

    it("the store's feed of changes delivers an announcement and subscribes again after its connection was killed", async () => {
      const store = new RedisRateLimitStore({
        client: given.client,
        keyPrefix: `feed-${kind.name.replace(/\W/g, '')}:`,
      });
      const changes: (readonly RateLimitStoreChange[] | 'everything')[] = [];
      let lives = 0;
      let losses = 0;
      const stop = await (store.changes as NonNullable<typeof store.changes>).listen({
        changed: (c) => changes.push(c),
        confirmed: () => undefined,
        live: () => lives++,
        lost: () => losses++,
      });
      try {
        expect(lives).toBe(1);
        await store.changes?.announce([{ policy: 'p', key: 'k' }]);
        await waitFor(async () => changes.length === 1, 'the announcement');
        expect(changes).toEqual([[{ policy: 'p', key: 'k' }]]);
        const servers = topology === 'standalone' ? [redis] : cluster.nodes;
        await Promise.all(servers.map((server) => server.client().call('CLIENT', 'KILL', 'TYPE', 'pubsub')));
        await waitFor(async () => losses === 1 && lives === 2, 'the feed to subscribe again');
        await store.changes?.announce('everything');
        await waitFor(async () => changes.length === 2, 'the announcement after');
        expect(changes[1]).toBe('everything');
      } finally {
        await stop();
      }
    });
  });
});
