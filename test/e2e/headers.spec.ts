import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { type RateLimitHeaders } from '../../lib/nest/rate-limit.options.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { alignedStart } from '../support/time.js';

@Controller()
class HeadersController {
  @Get('one')
  @RateLimit({ name: 'one', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' })
  one() {
    return { ok: true };
  }

  @Get('two')
  @RateLimit([
    { name: 'burst', algorithm: 'token-bucket', limit: 2, window: '1s', key: 'ip' },
    { name: 'minute', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' },
  ])
  two() {
    return { ok: true };
  }
}

async function appWith(adapter: (typeof ADAPTERS)[number], headers?: RateLimitHeaders) {
  return createApp(
    adapter,
    { imports: [RateLimitModule.forRoot({ headers })], controllers: [HeadersController] },
    new FakeClock(alignedStart(60_000)),
  );
}

const RATE_LIMIT_FIELDS = [
  'ratelimit',
  'ratelimit-policy',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];
const fieldsOf = (res: request.Response) => RATE_LIMIT_FIELDS.filter((f) => res.headers[f] !== undefined);

describe.each(ADAPTERS)('rate-limit headers on %s', (adapter) => {
  let app: INestApplication;
  let clock: FakeClock;
  afterEach(() => app.close());

  it('ietf (default): RateLimit-Policy and RateLimit on allowed and denied responses, with Retry-After on 429', async () => {
    ({ app, clock } = await appWith(adapter));
    const get = () => request(app.getHttpServer()).get('/one');
    let res = await get();
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe('"one";q=3;w=60');
    expect(res.headers['ratelimit']).toBe('"one";r=2;t=60');
    expect(fieldsOf(res)).toEqual(['ratelimit', 'ratelimit-policy']);
    expect((await get()).headers['ratelimit']).toBe('"one";r=1;t=60');
    clock.advance(10_000);
    expect((await get()).headers['ratelimit']).toBe('"one";r=0;t=50');
    clock.advance(400);
    res = await get();
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('50');
    expect(res.headers['ratelimit']).toBe('"one";r=0;t=50');
    expect(res.headers['ratelimit-policy']).toBe('"one";q=3;w=60');
    expect(res.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: 'Rate limit "one" exceeded; retry in 50 s',
      policy: 'one',
      retryAfter: 50,
    });
  });

  // A client told to wait less than the wait retries into another denial: 49.1 s left is 50, never 49.
  it('Retry-After and retryAfter are the wait rounded up, also when its fraction is below one half', async () => {
    ({ app, clock } = await appWith(adapter));
    const get = () => request(app.getHttpServer()).get('/one');
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    clock.advance(10_900);
    const res = await get();
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('50');
    expect(res.body).toMatchObject({ retryAfter: 50, message: 'Rate limit "one" exceeded; retry in 50 s' });
    clock.advance(48_999); // 1 ms left: still a whole second to say
    expect((await get()).headers['retry-after']).toBe('1');
  });

  it('ietf: one list item per policy, and a denial consumes none of them', async () => {
    ({ app, clock } = await appWith(adapter, 'ietf'));
    const get = () => request(app.getHttpServer()).get('/two');
    let res = await get();
    expect(res.headers['ratelimit-policy']).toBe('"burst";q=2;w=1, "minute";q=5;w=60');
    expect(res.headers['ratelimit']).toBe('"burst";r=1;t=1, "minute";r=4;t=60');
    res = await get();
    expect(res.headers['ratelimit']).toBe('"burst";r=0;t=1, "minute";r=3;t=60');
    res = await get();
    expect(res.status).toBe(429);
    expect(res.body.policy).toBe('burst');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers['ratelimit']).toBe('"burst";r=0;t=1, "minute";r=3;t=60');
    clock.advance(500);
    res = await get();
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit']).toBe('"burst";r=0;t=1, "minute";r=2;t=60');
  });

  it('legacy: X-RateLimit-Limit/-Remaining/-Reset of the most restrictive policy', async () => {
    ({ app, clock } = await appWith(adapter, 'legacy'));
    const get = () => request(app.getHttpServer()).get('/two');
    let res = await get();
    expect(fieldsOf(res)).toEqual(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']);
    expect([
      res.headers['x-ratelimit-limit'],
      res.headers['x-ratelimit-remaining'],
      res.headers['x-ratelimit-reset'],
    ]).toEqual(['2', '1', '1']);
    await get();
    res = await get();
    expect(res.status).toBe(429);
    expect([
      res.headers['x-ratelimit-limit'],
      res.headers['x-ratelimit-remaining'],
      res.headers['x-ratelimit-reset'],
    ]).toEqual(['2', '0', '1']);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('both: the IETF and the legacy fields', async () => {
    ({ app, clock } = await appWith(adapter, 'both'));
    const res = await request(app.getHttpServer()).get('/one');
    expect(fieldsOf(res)).toEqual(RATE_LIMIT_FIELDS);
    expect(res.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('none: no rate-limit fields, and still Retry-After on 429', async () => {
    ({ app, clock } = await appWith(adapter, 'none'));
    for (let i = 0; i < 3; i++) expect(fieldsOf(await request(app.getHttpServer()).get('/one'))).toEqual([]);
    const res = await request(app.getHttpServer()).get('/one');
    expect(res.status).toBe(429);
    expect(fieldsOf(res)).toEqual([]);
    expect(res.headers['retry-after']).toBe('60');
  });
});
