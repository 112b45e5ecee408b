import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';
import { REDIS_CLIENTS, type RedisClientKind, type TestRedisClient } from '../support/redis-clients.js';
import { startSentinel, type TestSentinel } from '../support/redis-sentinel.js';
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
  let sentinel: TestSentinel;
  let app: INestApplication;

  beforeAll(async () => {
    sentinel = await startSentinel();
  });

  afterAll(async () => {
    await app?.close();
    await given?.close();
    await sentinel.stop();
  });

  it('finds the master through the sentinel, and follows a failover to the promoted replica', async () => {
    given = through === 'ioredis options' ? undefined : await through.sentinel?.(sentinel.port, 'rl');
    ({ app } = await createApp('express', {
      imports: [
        RateLimitModule.forRoot({
          redis:
            given === undefined
              ? { options: { sentinels: [{ host: '127.0.0.1', port: sentinel.port }], name: 'rl' } }
              : { client: given.client },
          timeout: 200,
        }),
      ],
      controllers: [SentinelController],
    }));
    const get = () => request(app.getHttpServer()).get('/closed');
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    sentinel.master.process.kill('SIGKILL');
    await new Promise((resolve) => sentinel.master.process.once('exit', resolve));
    expect((await get()).status).toBe(503);
    await waitFor(async () => (await get()).status !== 503, 'the sentinel to promote the replica', 30_000);
    // the replica had the two requests replicated: with the one that got through just now, the limit of 3 is spent
    expect((await get()).status).toBe(429);
  });
});
