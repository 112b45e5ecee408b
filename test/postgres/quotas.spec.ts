import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, RateLimitService, type RateLimitModuleOptions } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { createApp } from '../support/nest-app.js';
import { migratedSchema } from '../support/postgres.js';
import { consumeFromProcesses } from '../support/processes.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

interface Req {
  headers: Record<string, string | undefined>;
}
const header = (name: string) => (ctx: { switchToHttp(): { getRequest<T>(): T } }) =>
  ctx.switchToHttp().getRequest<Req>().headers[name];
const PLANS: Record<string, number> = { free: 3, pro: 10 };
const planLimit = (plan = 'free'): number => {
  const limit = PLANS[plan];
  if (limit === undefined) throw new Error(`no plan ${plan}`);
  return limit;
};

@Controller()
class QuotaController {
  @Get('ai')
  @RateLimit({
    name: 'ai-monthly',
    algorithm: 'quota',
    period: 'month',
    timeZone: 'Europe/Paris',
    key: (ctx) => header('x-user')(ctx),
    limit: (ctx) => planLimit(header('x-plan')(ctx)),
  })
  ai() {
    return 'ok';
  }

  @Get('daily')
  @RateLimit({ name: 'daily', algorithm: 'quota', period: 'day', timeZone: 'America/New_York', limit: 2, key: 'ip' })
  daily() {
    return 'ok';
  }

  @Get('quota-first')
  @RateLimit([
    { name: 'qf-rate', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' },
    { name: 'qf-quota', algorithm: 'quota', period: 'month', limit: 1, key: 'ip' },
  ])
  quotaFirst() {
    return 'ok';
  }

  @Get('rate-first')
  @RateLimit([
    { name: 'rf-rate', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' },
    { name: 'rf-quota', algorithm: 'quota', period: 'month', limit: 5, key: 'ip' },
  ])
  rateFirst() {
    return 'ok';
  }
}

const db = migratedSchema('q');

/** An app on `options`, with the tests' store timeout (a fresh app's first statements, on a loaded machine). */
async function appOn(options: RateLimitModuleOptions, clock: FakeClock): Promise<INestApplication> {
  const { app } = await createApp(
    'express',
    { imports: [RateLimitModule.forRoot({ timeout: 2000, ...options })], controllers: [QuotaController] },
    clock,
  );
  return app;
}

describe('quotas on PostgreSQL', () => {
  it('counts per plan and per calendar month in Paris, exactly at midnight, with usage for billing', async () => {
    const clock = new FakeClock(Date.parse('2026-01-31T22:59:59.000Z')); // 23:59:59 in Paris
    const app = await appOn({ postgres: { pool: db.pool, schema: db.schema }, keyPrefix: 'm1:' }, clock);
    const ai = (user: string, plan = 'free') =>
      request(app.getHttpServer()).get('/ai').set('x-user', user).set('x-plan', plan);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await ai('alice')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const denied = await ai('alice');
    expect(denied.headers['retry-after']).toBe('1');
    expect(denied.headers['ratelimit-policy']).toBe('"ai-monthly";q=3;w=2678400');
    expect(denied.headers['ratelimit']).toBe('"ai-monthly";r=0;t=1');
    expect((await ai('alice', 'pro')).status).toBe(200); // the pro plan's 10 apply to the same usage
    clock.advance(1000); // midnight in Paris: February
    expect((await ai('alice')).headers['ratelimit']).toBe('"ai-monthly";r=2;t=2419200');
    const service = app.get(RateLimitService);
    const january = await service.usage('ai-monthly', 'alice', new Date('2026-01-15T12:00:00Z'));
    expect(january).toEqual({
      used: 4,
      limit: 10,
      periodStart: new Date('2025-12-31T23:00:00.000Z'),
      periodEnd: new Date('2026-01-31T23:00:00.000Z'),
    });
    expect(await service.usage('ai-monthly', 'alice')).toMatchObject({ used: 1, limit: 3 });
    await app.close();
  });

  it('counts per calendar day in New York', async () => {
    const clock = new FakeClock(Date.parse('2026-03-08T04:59:59.500Z')); // 23:59:59.5 in New York
    const app = await appOn({ postgres: { pool: db.pool, schema: db.schema }, keyPrefix: 'd1:' }, clock);
    const get = () => request(app.getHttpServer()).get('/daily');
    expect([(await get()).status, (await get()).status, (await get()).status]).toEqual([200, 200, 429]);
    clock.advance(500);
    expect((await get()).status).toBe(200);
    // 8 March is the day clocks go forward in New York: it lasts 23 hours
    expect((await get()).headers['ratelimit']).toBe(`"daily";r=0;t=${23 * 3600}`);
    await app.close();
  });

  it('keeps usage exact under 1,000 concurrent increments from 4 processes', async () => {
    expect(await consumeFromProcesses(`pg:${db.schema}`, 'quota', 'c1:', { perProcess: 250, limit: 5000 })).toBe(1000);
    const { rows } = await db.pool.query(
      `SELECT used, quota_limit FROM ${db.schema}.rate_limit_quota_usage WHERE key = $1`,
      [storageKey('c1:', { id: 'flood', shape: 'qm-Europe/Paris' }, 'one-key')],
    );
    expect(rows).toEqual([{ used: '1000', quota_limit: '5000' }]);
    expect(await consumeFromProcesses(`pg:${db.schema}`, 'quota', 'c2:', { perProcess: 250, limit: 700 })).toBe(700);
  });

  it('keeps usage across an application restart (a durable table)', async () => {
    const clock = new FakeClock(Date.parse('2026-05-10T10:00:00Z'));
    const options = { postgres: { connectionString: db.url, schema: db.schema }, keyPrefix: 'r1:' };
    let app = await appOn(options, clock);
    for (let i = 0; i < 2; i++) await request(app.getHttpServer()).get('/ai').set('x-user', 'bob');
    await app.close();
    app = await appOn(options, clock);
    expect(await app.get(RateLimitService).usage('ai-monthly', 'bob')).toMatchObject({ used: 2, limit: 3 });
    expect((await request(app.getHttpServer()).get('/ai').set('x-user', 'bob')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/ai').set('x-user', 'bob')).status).toBe(429);
    await app.close();
  });
});

describe('rate limits in Redis, quotas in PostgreSQL', () => {
  let redis: TestRedis;
  let app: INestApplication;
  beforeAll(async () => {
    redis = await startRedis();
    app = await appOn(
      { redis: { url: redis.url }, postgres: { pool: db.pool, schema: db.schema }, keyPrefix: 'x1:' },
      new FakeClock(Date.parse('2026-05-10T10:00:00Z')),
    );
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it('a request denied by its quota consumes no rate limit', async () => {
    const service = app.get(RateLimitService);
    expect((await request(app.getHttpServer()).get('/quota-first')).status).toBe(200);
    const denied = await request(app.getHttpServer()).get('/quota-first');
    expect(denied.status).toBe(429);
    expect(denied.body.policy).toBe('qf-quota');
    expect(denied.headers['ratelimit']).toMatch(/^"qf-rate";r=4;t=\d+, "qf-quota";r=0;t=\d+$/);
    expect((await service.peek('qf-rate', 'ip:127.0.0.1')).remaining).toBe(4);
    expect(await redis.client().keys('x1:{qf-quota*')).toEqual([]); // the quota lives in PostgreSQL only
  });

  it('a request denied by a rate limit consumes no quota', async () => {
    const service = app.get(RateLimitService);
    expect((await request(app.getHttpServer()).get('/rate-first')).status).toBe(200);
    const denied = await request(app.getHttpServer()).get('/rate-first');
    expect(denied.status).toBe(429);
    expect(denied.body.policy).toBe('rf-rate');
    expect((await service.usage('rf-quota', 'ip:127.0.0.1')).used).toBe(1);
  });
});
