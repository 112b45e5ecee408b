import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimit, RateLimitModule, RateLimitService } from 'nest-rate-limit';
import request from 'supertest';

import { startRedis, type TestRedis } from '../support/redis-server.js';

// The Redis-backed e2e test of docs/testing.md: the part between the readme markers is the page's.

@Controller()
class HelloController {
  @Get('hello')
  @RateLimit({ name: 'hello', algorithm: 'sliding-window-counter', limit: 2, window: '1m', key: 'ip' })
  hello() {
    return 'hello';
  }
}

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
  process.env.REDIS_URL = redis.url;
});
afterAll(() => redis.stop());

describe('GET /hello on Redis', () => {
  // readme:start redis-e2e
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        // A prefix of this run's own: runs and files that share a Redis never see each other's counters.
        RateLimitModule.forRoot({ redis: { url: process.env.REDIS_URL }, keyPrefix: `test-${process.pid}:` }),
      ],
      controllers: [HelloController],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });
  // Removes this prefix's keys only (SCAN and UNLINK in small batches), on every instance's cache too.
  afterEach(() => app.get(RateLimitService).resetAll());
  afterAll(() => app.close());
  // readme:end

  it('allows 2 a minute, and the next test starts from nothing', async () => {
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(429);
  });

  it('starts from nothing', async () => {
    await request(app.getHttpServer()).get('/hello').expect(200);
    // the prefix's keys only: resetAll leaves the rest of the server as it was
    const other = redis.client();
    await other.set('not-ours', '1');
    expect(await app.get(RateLimitService).resetAll()).toBe(1);
    expect(await other.get('not-ours')).toBe('1');
  });
});
