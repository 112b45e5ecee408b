import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { createApp } from './nest-app.js';
import type { RedisClientKind, TestRedisClient } from './redis-clients.js';
import { startCluster, type TestCluster } from './redis-cluster.js';
import { waitFor } from './wait.js';

// A master of a 6-node Redis Cluster killed under an app (test/cluster/cluster-failover-*.spec.ts): the fail modes
// hold while it is down, and limits are enforced again once its replica took over.

/** The clients of ioredis's line (ioredis 6 and 5, iovalkey); the others are node-redis's and GLIDE. */
export const ioredisFamily = (kind: RedisClientKind) => /^(ioredis|iovalkey)/.test(kind.name);

@Controller()
class FailoverController {
  @Get('open')
  @RateLimit({ name: 'fo-open', algorithm: 'gcra', limit: 1000, window: '1m', key: 'ip', failMode: 'open' })
  open() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit({ name: 'fo-closed', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip', failMode: 'closed' })
  closed() {
    return 'ok';
  }
}

/**
 * The failover test through a Cluster client of each of `kinds`, each on a Cluster of its own (a failover leaves
 * a master without a replica). The spec files of test/cluster/ split REDIS_CLIENTS between them with
 * `ioredisFamily`.
 */
export function describeFailoverThrough(kinds: readonly RedisClientKind[]): void {
  describe.each(kinds)('failover through a $name Cluster client', (kind) => {
    let own: TestCluster;
    let given: TestRedisClient;
    let app: INestApplication;
    beforeAll(async () => {
      own = await startCluster();
      given = await kind.cluster(own.ports.slice(0, 3));
    });
    afterAll(async () => {
      await app?.close();
      await given?.close();
      await own?.stop();
    });

    it('holds the fail modes while a master is down, and enforces limits again once its replica took over', async () => {
      ({ app } = await createApp('express', {
        imports: [RateLimitModule.forRoot({ redis: { client: given.client }, timeout: 100, keyPrefix: 'fo:' })],
        controllers: [FailoverController],
      }));
      const get = (path: string) => request(app.getHttpServer()).get(path);
      expect((await get('/closed')).status).toBe(200);
      const master = await own.masterOf(storageKey('fo:', { id: 'fo-closed', shape: 'fw1m' }, 'ip:127.0.0.1'));
      master.process.kill('SIGKILL');
      await new Promise((resolve) => master.process.once('exit', resolve));
      // Before the replica is promoted (cluster-node-timeout is 1 s): fail open stays up, fail closed stays shut.
      expect((await get('/open')).status).toBe(200);
      expect((await get('/closed')).status).toBe(503);
      // While the cluster fails over, each answer is the fail mode or a decision: never an error or a hang.
      for (let i = 0; i < 5; i++) {
        expect((await get('/open')).status).toBe(200);
        expect([200, 429, 503]).toContain((await get('/closed')).status);
      }
      await waitFor(async () => (await get('/closed')).status !== 503, 'the replica to take over', 20_000);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await get('/closed')).status);
      expect(statuses).toContain(429);
      expect(statuses.filter((s) => s === 503)).toEqual([]);
    });
  });
}
