import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitDecisionEvent } from '../../lib/index.js';
import { SKIP_REPORT_AFTER } from '../../lib/limiter/skip-watch.js';
import { CapturingLogger } from '../support/log-lines.js';

// Regression: a key function that returns undefined for every request (`headers['X-Api-Key']`: Node lower-cases
// header names) switched its policy off without a word: 5 of 5 requests got 200, no log line, and the policy
// never appeared in RateLimit-Policy. Skipping on purpose (a login without a username) stays quiet.

type Req = { headers: Record<string, string | undefined>; query: Record<string, string | undefined> };

@Controller()
class ItemsController {
  /** The tester's mistake: an upper-case header name, which no Node request has. */
  @Get('mistyped')
  @RateLimit({
    name: 'per-api-key',
    algorithm: 'fixed-window',
    limit: 5,
    window: '1m',
    key: (ctx) => ctx.switchToHttp().getRequest<Req>().headers['X-Api-Key'],
  })
  mistyped() {
    return 'ok';
  }

  /** Skips on purpose: only requests that name an account are counted. */
  @Get('login')
  @RateLimit({
    name: 'per-account',
    algorithm: 'fixed-window',
    limit: 1000,
    window: '1m',
    key: (ctx) => ctx.switchToHttp().getRequest<Req>().query.user,
  })
  login() {
    return 'ok';
  }
}

describe('regression: a key function that skips every request', () => {
  let app: INestApplication;
  let logger: CapturingLogger;
  const events: RateLimitDecisionEvent[] = [];

  beforeEach(async () => {
    events.length = 0;
    logger = new CapturingLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ onDecision: (e) => events.push(e) })],
      controllers: [ItemsController],
    }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger });
    await app.init();
  });
  afterEach(async () => app.close());

  const get = (path: string) => request(app.getHttpServer()).get(path).set('x-api-key', 'sk_live_1');
  const reports = () => logger.warnings.filter((line) => line.includes('has applied to none'));

  it(`reports the policy once after ${SKIP_REPORT_AFTER} requests, naming Class.method and the likely cause`, async () => {
    for (let i = 0; i < SKIP_REPORT_AFTER - 1; i++) expect((await get('/mistyped')).status).toBe(200);
    expect(reports()).toEqual([]);
    for (let i = 0; i < 2 * SKIP_REPORT_AFTER; i++) await get('/mistyped');
    expect(reports()).toEqual([
      expect.stringMatching(
        /Policy "per-api-key" on ItemsController\.mistyped has applied to none of the 100 requests it saw: .*lower-cases header names/,
      ),
    ]);
  });

  it('shows each skip in onDecision', async () => {
    await get('/mistyped');
    expect(events).toEqual([
      expect.objectContaining({ policy: 'per-api-key', skipped: true, allowed: true, key: '', cost: 0, remaining: 5 }),
    ]);
  });

  it('stays quiet for a policy that skips some requests on purpose', async () => {
    await request(app.getHttpServer()).get('/login?user=alice');
    for (let i = 0; i < 2 * SKIP_REPORT_AFTER; i++) await request(app.getHttpServer()).get('/login');
    expect(reports()).toEqual([]);
    expect(events.filter((e) => e.skipped)).toHaveLength(2 * SKIP_REPORT_AFTER);
    expect(events.filter((e) => !e.skipped)).toEqual([expect.objectContaining({ key: 'alice', skipped: false })]);
  });
});
