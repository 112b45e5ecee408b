import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';
import { REDIS_CLIENTS, type RedisClientKind, type TestRedisClient } from '../support/redis-clients.js';
import { freePort, startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

@Controller()
class SentinelController {
  @Get('closed')
  @RateLimit({ name: 'sentinel', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip', failMode: 'closed' })
  closed() {
    return 'ok';
  }
}

/** ioredis options naming the sentinel, or the Sentinel client of one package given as `client`. */
type Through = 'ioredis options' | RedisClientKind;
const THROUGH: { through: Through; name: string }[] = [
  { through: 'ioredis options', name: 'ioredis options' },
  ...REDIS_CLIENTS.filter((kind) => kind.sentinel !== undefined).map((kind) => ({
    through: kind,
    name: `a ${kind.name} Sentinel client`,
  })),
];

describe.each(THROUGH)('Redis Sentinel, through $name', ({ through }) => {
  let given: TestRedisClient | undefined;
  let master: TestRedis;
  let replica: TestRedis;
  let sentinelPort: number;
  let sentinel: ReturnType<typeof spawn>;
  let dir: string;
  let app: INestApplication;

  beforeAll(async () => {
    master = await startRedis();
    replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    dir = mkdtempSync(join(tmpdir(), 'rl-sentinel-'));
    sentinelPort = await freePort();
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor rl 127.0.0.1 ${master.port} 1`,
        'sentinel down-after-milliseconds rl 1000',
        'sentinel failover-timeout rl 5000',
      ].join('\n'),
    );
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    const probe = new Redis({ host: '127.0.0.1', port: replica.port, lazyConnect: true });
    await waitFor(async () => {
      try {
        if (probe.status !== 'ready') await probe.connect();
        return (await probe.info('replication')).includes('master_link_status:up');
      } catch {
        return false;
      }
    }, 'the replica to sync');
    probe.disconnect();
  });

  afterAll(async () => {
    await app?.close();
    await given?.close();
    sentinel.kill('SIGKILL');
    await replica.stop();
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds the master through the sentinel, and follows a failover to the promoted replica', async () => {
    given = through === 'ioredis options' ? undefined : await through.sentinel?.(sentinelPort, 'rl');
    ({ app } = await createApp('express', {
      imports: [
        RateLimitModule.forRoot({
          redis:
            given === undefined
              ? { options: { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'rl' } }
              : { client: given.client },
          timeout: 200,
        }),
      ],
      controllers: [SentinelController],
    }));
    const get = () => request(app.getHttpServer()).get('/closed');
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    master.process.kill('SIGKILL');
    await new Promise((resolve) => master.process.once('exit', resolve));
    expect((await get()).status).toBe(503);
    await waitFor(async () => (await get()).status !== 503, 'the sentinel to promote the replica', 30_000);
    // the replica had the two requests replicated: with the one that got through just now, the limit of 3 is spent
    expect((await get()).status).toBe(429);
  });
});
