import { Body, Controller, type INestApplication, Post } from '@nestjs/common';
import calculateSlot from 'cluster-key-slot';
import request from 'supertest';

import { RateLimit, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { createApp } from '../support/nest-app.js';
import { startCluster, type TestCluster } from '../support/redis-cluster.js';
import { checkCredentials, type Credentials, LOGIN } from './fixtures.js';

const PREFIX = 'oc:';

/**
 * Failed logins per account and per IP: a success is given back to both, which live in different slots. The
 * per-IP budget is wide, so that units a concurrent request holds there for a moment never deny another.
 */
@Controller()
class ClusterLoginController {
  @Post('login')
  @RateLimit([
    LOGIN,
    { name: 'login-ip', algorithm: 'sliding-window-log', limit: 1000, window: '15m', key: 'ip', count: 'failed' },
  ])
  login(@Body() credentials: Credentials) {
    return checkCredentials(credentials);
  }
}

describe('counting by outcome on Redis Cluster', () => {
  let cluster: TestCluster;
  let app: INestApplication;
  beforeAll(async () => {
    cluster = await startCluster();
    ({ app } = await createApp('express', {
      // A store call slower than the default 100 ms fails open by design: on a machine loaded by other test
      // runs beside the six cluster nodes, a run admitted 6 of 200 (no such log: the app logs nothing), most
      // likely so. This test counts outcomes, not timeouts, so its calls may take their time.
      imports: [RateLimitModule.forRoot({ redis: { client: cluster.client() }, keyPrefix: PREFIX, timeout: 5_000 })],
      controllers: [ClusterLoginController],
    }));
  });
  afterAll(async () => {
    await app?.close();
    await cluster?.stop();
  });

  const remaining = async (account: string): Promise<[number, number]> => {
    await app.get(RateLimiter).refundsSettled();
    const service = app.get(RateLimitService);
    return [
      (await service.peek('login', `account:${account}`)).remaining,
      (await service.peek('login-ip', 'ip:127.0.0.1')).remaining,
    ];
  };

  it('gives a success back to policies in two slots, and keeps the failures in both', async () => {
    expect(calculateSlot(storageKey(PREFIX, { id: 'login', shape: 'swl15m' }, 'account:ada'))).not.toBe(
      calculateSlot(storageKey(PREFIX, { id: 'login-ip', shape: 'swl15m' }, 'ip:127.0.0.1')),
    );
    const statuses: number[] = [];
    for (const password of ['wrong', 'right', 'wrong', 'right']) {
      statuses.push((await request(app.getHttpServer()).post('/login').send({ account: 'ada', password })).status);
    }
    expect(statuses).toEqual([401, 201, 401, 201]);
    expect(await remaining('ada')).toEqual([3, 998]);
  });

  it('charges exactly 5 of 200 concurrent failed logins at 5 per account, in both slots', async () => {
    const [, ipBefore] = await remaining('bob');
    const responses = await Promise.all(
      Array.from({ length: 200 }, () =>
        request(app.getHttpServer()).post('/login').send({ account: 'bob', password: 'wrong' }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(195);
    expect(await remaining('bob')).toEqual([0, ipBefore - 5]);
  });
});
