import { request as httpRequest } from 'node:http';
import type { AddressInfo, Server } from 'node:net';

import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RATE_LIMIT_CLOCK,
  type RateLimitDecision,
  RateLimitService,
  RateLimitStore,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ModelApi, PROVIDER_KEY, PROVIDER_RPM } from '../../sample-app/ai-provider.service.js';
import { AppModule, rateLimitOptions } from '../../sample-app/app.module.js';
import { ADAPTERS } from '../support/nest-app.js';
import { openSse } from '../support/sse-client.js';
import { waitFor } from '../support/wait.js';
import { alignedStart } from '../support/time.js';
import { startSampleApp, TestModel } from './harness.js';

const RATE_LIMIT_FIELDS = ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit'];

/** The `RateLimit` item of one policy, e.g. `"login-account";r=4;t=900`. */
function item(res: request.Response, policy: string): string | undefined {
  return String(res.headers['ratelimit'] ?? '')
    .split(', ')
    .find((i) => i.startsWith(`"${policy}";`));
}

describe('rateLimitOptions', () => {
  it('uses the in-memory store without REDIS_URL, Redis with it', () => {
    expect(rateLimitOptions({})).toEqual({
      defaults: [{ name: 'per-user', algorithm: 'sliding-window-counter', limit: 100, window: '1m' }],
      trustProxy: 'loopback',
      shedding: { maxEventLoopDelay: '500ms' },
    });
    expect(rateLimitOptions({ REDIS_URL: 'redis://cache:6379' }).redis).toEqual({ url: 'redis://cache:6379' });
  });
});

describe.each(ADAPTERS)('the sample app on %s (the README walkthrough)', (adapter) => {
  let app: INestApplication;
  let clock: FakeClock;
  let model: TestModel;
  const savedRedisUrl = process.env.REDIS_URL;
  const http = () => request(app.getHttpServer());
  /** Once the refunds of the responses already sent (count: 'failed', concurrency leases) are in the store. */
  const refundsSettled = () => app.get(RateLimiter).refundsSettled();
  const remaining = async (policy: string, key: string) => {
    await refundsSettled();
    return (await app.get(RateLimitService).peek(policy, key)).remaining;
  };
  const login = (username: string, password: string, forwardedFor?: string) => {
    const req = http().post('/auth/login').send({ username, password });
    return forwardedFor === undefined ? req : req.set('X-Forwarded-For', forwardedFor);
  };
  const complete = (apiKey: string | undefined, body: object) => {
    const req = http().post('/ai/complete').send(body);
    return apiKey === undefined ? req : req.set('x-api-key', apiKey);
  };
  /** This month's model tokens used by a user, once the settlements under way have reached the store. */
  const monthUsed = async (apiKey: string): Promise<number> => {
    await refundsSettled();
    return (await http().get('/ai/usage').set('x-api-key', apiKey)).body.used as number;
  };
  /** Listens on a free loopback port, for tests that hold a connection open or close it mid-request. */
  const listen = async (): Promise<number> => {
    await app.listen(0, '127.0.0.1');
    return ((app.getHttpServer() as Server).address() as AddressInfo).port;
  };
  const exportRows = (rows: string | undefined, apiKey = 'demo-key-bob') =>
    http()
      .get('/reports/export')
      .query(rows === undefined ? {} : { rows })
      .set('x-api-key', apiKey);

  beforeEach(async () => {
    delete process.env.REDIS_URL; // the in-memory store, whatever the environment
    clock = new FakeClock(alignedStart(60_000)); // a minute's start: the sliding-window-counter's `t` is exact
    model = new TestModel();
    app = await startSampleApp(adapter, clock, model);
  });
  afterEach(async () => {
    model.release();
    await app.close();
    if (savedRedisUrl !== undefined) process.env.REDIS_URL = savedRedisUrl;
  });

  it('GET /: an index of the routes and how to try each (it used to be a 404)', async () => {
    const res = await http().get('/');
    expect(res.status).toBe(200);
    const routes = (res.body as { routes: { route: string; try: string }[] }).routes.map((r) => r.route);
    expect(routes).toEqual(expect.arrayContaining(['POST /auth/login', 'POST /ai/complete', 'GET /health']));
    expect(res.headers['ratelimit-policy']).toContain('"per-user"');
  });

  // Regression: the commands named localhost:3000 whatever PORT the app listened on.
  it('GET /: its commands use the address the client reached the app at', async () => {
    const res = await http().get('/').set('host', 'localhost:8080');
    const commands = (res.body as { routes: { try: string }[] }).routes.map((r) => r.try);
    const curls = commands.filter((c) => c.startsWith('curl'));
    expect(curls.length).toBeGreaterThan(4);
    expect(curls.filter((c) => !c.includes('http://localhost:8080/'))).toEqual([]);
  });

  it('GET /health: 200 without rate-limit headers', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await http().get('/health');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
      expect(RATE_LIMIT_FIELDS.filter((f) => res.headers[f] !== undefined)).toEqual([]);
    }
  });

  it('POST /auth/login: 5 failed attempts per account, then 429 with Retry-After; other accounts still log in', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await login('alice', 'wrong');
      expect(res.status).toBe(401);
      expect(res.body.message).toBe('Invalid username or password');
      expect(res.headers['ratelimit-policy']).toBe(
        '"per-user";q=100;w=60, "login-account";q=5;w=900, "login-ip";q=20;w=900',
      );
      expect(item(res, 'login-account')).toBe(`"login-account";r=${5 - i};t=900`);
      expect(item(res, 'login-ip')).toBe(`"login-ip";r=${20 - i};t=900`);
    }
    // The sixth is refused before the password is looked at, even the right one, and however it is spelled.
    for (const username of ['alice', ' ALICE ']) {
      const res = await login(username, 'correct-horse');
      expect(res.status).toBe(429);
      expect(res.headers['retry-after']).toBe('900');
      expect(item(res, 'login-account')).toBe('"login-account";r=0;t=900');
      expect(res.body).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        code: 'RATE_LIMITED',
        message: 'Rate limit "login-account" exceeded; retry in 900 s',
        policy: 'login-account',
        retryAfter: 900,
      });
    }
    const bob = await login('bob', 'correct-horse');
    expect(bob.status).toBe(200);
    expect(bob.body).toEqual({ token: 'demo-token-bob' });
    // Denied attempts consumed nothing: bob's was the sixth counted for this IP.
    expect(item(bob, 'login-ip')).toBe('"login-ip";r=14;t=900');

    clock.advance(15 * 60_000);
    expect((await login('alice', 'correct-horse')).status).toBe(200);
  });

  it('POST /auth/login: counts failed logins only: successful ones give their unit back, the 6th failure is 429', async () => {
    // Each success is charged while it runs (r=4) and refunded once answered: ten of them never exhaust 5.
    for (let i = 0; i < 10; i++) {
      const res = await login('alice', 'correct-horse');
      expect(res.status).toBe(200);
      expect(item(res, 'login-account')).toBe('"login-account";r=4;t=900');
      await refundsSettled();
    }
    // Failures stay counted, successes between them still cost nothing.
    for (let i = 1; i <= 5; i++) {
      const failed = await login('alice', 'wrong');
      expect(failed.status).toBe(401);
      expect(item(failed, 'login-account')).toBe(`"login-account";r=${5 - i};t=900`);
      if (i < 5) expect((await login('alice', 'correct-horse')).status).toBe(200);
      await refundsSettled();
    }
    expect(await remaining('login-account', 'account:alice')).toBe(0);
    const sixth = await login('alice', 'wrong');
    expect(sixth.status).toBe(429);
    expect(sixth.headers['retry-after']).toBe('900');
    expect(sixth.body).toMatchObject({ code: 'RATE_LIMITED', policy: 'login-account', retryAfter: 900 });
    // Per account: bob's budget is whole.
    expect(item(await login('bob', 'wrong'), 'login-account')).toBe('"login-account";r=4;t=900');
  });

  it('POST /auth/login: 20 attempts per client IP, X-Forwarded-For believed from loopback', async () => {
    // Successful logins from one address (an office behind NAT) are given back: 25 of them do not reach 20.
    for (let i = 0; i < 25; i++) {
      expect((await login(`member${i}`, 'correct-horse')).status).toBe(200);
      await refundsSettled();
    }
    for (let i = 0; i < 20; i++) expect((await login(`user${i}`, 'wrong')).status).toBe(401);
    const blocked = await login('carol', 'correct-horse');
    expect(blocked.status).toBe(429);
    expect(blocked.body.policy).toBe('login-ip');
    expect(blocked.headers['retry-after']).toBe('900');
    // The test client connects over loopback, which trustProxy 'loopback' treats as a proxy.
    const proxied = await login('carol', 'correct-horse', '203.0.113.7');
    expect(proxied.status).toBe(200);
    expect(item(proxied, 'login-ip')).toBe('"login-ip";r=19;t=900');
  });

  it('POST /auth/login: 400 without a username (counted per IP only)', async () => {
    const res = await http().post('/auth/login').send({ password: 'correct-horse' });
    expect(res.status).toBe(400);
    expect(res.headers['ratelimit-policy']).toBe('"per-user";q=100;w=60, "login-ip";q=20;w=900');
    expect(item(res, 'login-ip')).toBe('"login-ip";r=19;t=900');
  });

  it('POST /ai/complete: 401 without a valid API key, 200 with RateLimit headers with one', async () => {
    for (const key of [undefined, 'demo-key-mallory']) {
      const res = await complete(key, { prompt: 'Hello', maxTokens: 16 });
      expect(res.status).toBe(401);
      expect(res.body.message).toBe('Missing or unknown x-api-key');
    }
    const res = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe(
      '"per-user";q=100;w=60, "ai-concurrent";q=2;qu="concurrent-requests", "ai-tokens";q=20000;w=120, "ai-monthly";q=50000;w=2678400',
    );
    // per-user is keyed by alice (not the IP) because ApiKeyGuard ran first; this call holds one of alice's 2
    // slots; the token policies as they stood once the estimate (2 + 16) was charged, before the model ran.
    expect(item(res, 'per-user')).toBe('"per-user";r=99;t=120');
    expect(item(res, 'ai-concurrent')).toBe('"ai-concurrent";r=1;t=300');
    expect(item(res, 'ai-tokens')).toBe('"ai-tokens";r=19982;t=1');
    expect(item(res, 'ai-monthly')).toMatch(/^"ai-monthly";r=49982;t=\d+$/);
    expect(res.body).toEqual({
      completion: 'Hello',
      usage: { promptTokens: 2, completionTokens: 8, totalTokens: 10 },
    });
    const next = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    expect(item(next, 'ai-tokens')).toBe('"ai-tokens";r=19972;t=1'); // 10 used, then this call's 18
  });

  it('POST /ai/complete: a completion is charged the tokens the model used, not its estimate (peek after it)', async () => {
    model.usage = { promptTokens: 3, completionTokens: 2 }; // the provider's count, not the estimate's 2 + 16
    const res = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    expect(res.status).toBe(200);
    expect(res.body.usage).toEqual({ promptTokens: 3, completionTokens: 2, totalTokens: 5 });
    expect(item(res, 'ai-tokens')).toBe('"ai-tokens";r=19982;t=1'); // the estimate, charged before the model ran
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000 - 5);
    expect(await monthUsed('demo-key-alice')).toBe(5);
  });

  it('POST /ai/complete: an overrun is charged in full, and later requests pay the debt back by waiting', async () => {
    // The estimate, 2 + 16 000, fits; the provider counts a prompt of 30 000 tokens (a long attachment, say).
    model.usage = { promptTokens: 30_000 };
    const res = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16_000 });
    expect(res.status).toBe(200); // the response already sent is never failed by the overrun
    expect(res.body.usage.totalTokens).toBe(38_000);
    expect(await monthUsed('demo-key-alice')).toBe(38_000);
    // 20 000 in the bucket, 38 000 charged: 18 000 in debt. The next call's 18 wait for 18 018 to refill at
    // 10 000 a minute: 108.108 s.
    model.usage = {};
    const hello = { prompt: 'Hello', maxTokens: 16 };
    const refused = await complete('demo-key-alice', hello);
    expect(refused.status).toBe(429);
    expect(refused.body.policy).toBe('ai-tokens');
    expect(refused.headers['retry-after']).toBe('109');
    clock.advance(108_107);
    expect((await complete('demo-key-alice', hello)).status).toBe(429);
    clock.advance(1);
    expect((await complete('demo-key-alice', hello)).status).toBe(200);
    expect(await remaining('ai-tokens', 'user:alice')).toBe(0 + 18 - 10); // the call's estimate less its use
    // Per user: bob owes nothing.
    expect((await complete('demo-key-bob', hello)).status).toBe(200);
  });

  it('POST /ai/complete: a call the provider fails is charged nothing', async () => {
    model.failing = true;
    const res = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    expect(res.status).toBe(502);
    expect(res.body.message).toBe('The AI provider answered 500');
    expect(model.roundTrips).toBe(1);
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000);
    expect(await monthUsed('demo-key-alice')).toBe(0);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(2);
  });

  it('GET /ai/stream: the estimate is charged while it streams, and settled at the usage of its last event', async () => {
    const port = await listen();
    model.holding = true; // the model sends its first chunk, then waits
    const stream = openSse(port, '/ai/stream?prompt=Hello&maxTokens=16', { 'x-api-key': 'demo-key-alice' });
    expect(await stream.next()).toEqual({ data: '{"text":"Hello"}' });
    expect((await stream.response).headers['ratelimit']).toContain('"ai-tokens";r=19982;t=1');
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000 - 18); // the estimate, until the end
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(1);

    model.usage = { completionTokens: 40 }; // more than maxTokens: an overrun of 24 is charged
    model.release();
    expect(await stream.next()).toEqual({
      event: 'usage',
      data: '{"usage":{"promptTokens":2,"completionTokens":40,"totalTokens":42}}',
    });
    await stream.ended;
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000 - 42);
    expect(await monthUsed('demo-key-alice')).toBe(42);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(2);
  });

  it('GET /ai/stream: 400 for a bad query, charged nothing; the stream shares its limits with /ai/complete', async () => {
    const bad = await http().get('/ai/stream?prompt=Hello&maxTokens=1e3').set('x-api-key', 'demo-key-alice');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('maxTokens must be an integer from 1 to 16000');
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000);
    await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    const streamed = await http().get('/ai/stream?prompt=Hello&maxTokens=16').set('x-api-key', 'demo-key-alice');
    expect(streamed.status).toBe(200);
    expect(item(streamed, 'ai-tokens')).toBe('"ai-tokens";r=19972;t=1');
  });

  it('POST /ai/complete: rejects bad bodies with 400 and charges nothing', async () => {
    for (const body of [
      {},
      { prompt: '', maxTokens: 1 },
      { prompt: 'x', maxTokens: 0 },
      { prompt: 'x', maxTokens: 16_001 },
    ]) {
      expect((await complete('demo-key-alice', body)).status).toBe(400);
    }
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000);
    expect(model.roundTrips).toBe(0);
    expect(item(await complete('demo-key-alice', { prompt: 'x', maxTokens: 1 }), 'ai-tokens')).toBe(
      '"ai-tokens";r=19998;t=1',
    );
  });

  it('POST /ai/complete: a huge maxTokens is charged up front, so the second call gets 429 with Retry-After', async () => {
    const huge = { prompt: 'Hello', maxTokens: 16_000 };
    const first = await complete('demo-key-alice', huge);
    expect(first.status).toBe(200);
    expect(await remaining('ai-tokens', 'user:alice')).toBe(11_998); // 20 000 - 16 002 charged + 8 000 given back

    const second = await complete('demo-key-alice', huge);
    expect(second.status).toBe(429);
    // 4 004 tokens short at 10 000 per minute: 24.024 s.
    expect(second.headers['retry-after']).toBe('25');
    expect(second.body).toMatchObject({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      policy: 'ai-tokens',
      retryAfter: 25,
    });
    // Per user: bob's bucket is full.
    expect((await complete('demo-key-bob', huge)).status).toBe(200);

    clock.advance(24_023);
    expect((await complete('demo-key-alice', huge)).status).toBe(429);
    clock.advance(1);
    expect((await complete('demo-key-alice', huge)).status).toBe(200);
  });

  it('POST /ai/complete: 2 completions of a user run at once; a third is refused while they run; the leases come back', async () => {
    const hello = { prompt: 'Hello', maxTokens: 16 };
    model.holding = true;
    const running = Promise.all([complete('demo-key-alice', hello), complete('demo-key-alice', hello)]);
    await waitFor(() => model.inFlight === 2);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(0);

    const third = await complete('demo-key-alice', hello);
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED', policy: 'ai-concurrent' });
    expect(item(third, 'ai-concurrent')).toBe('"ai-concurrent";r=0;t=1');
    expect(model.roundTrips).toBe(2); // refused before the handler: no model call, no tokens charged
    // Per user: bob's completion runs beside alice's two.
    const bobs = complete('demo-key-bob', hello).then((res) => res);
    await waitFor(() => model.inFlight === 3);

    model.release();
    expect((await running).map((res) => res.status)).toEqual([200, 200]);
    expect((await bobs).status).toBe(200);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(2);
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000 - 2 * 10); // the refused third paid nothing
    clock.advance(2_000); // a slot of the provider's budget (3 at once, then one every 2 s), for the next call
    const next = await complete('demo-key-alice', hello);
    expect(next.status).toBe(200);
    expect(item(next, 'ai-concurrent')).toBe('"ai-concurrent";r=1;t=300');
  });

  it("POST /ai/complete: 429 with the provider's Retry-After when its budget has no slot in time; nothing charged", async () => {
    // The provider's budget is out for a minute, far past the 5 s a completion may wait for it.
    await app.get(RateLimitService).block(PROVIDER_RPM, PROVIDER_KEY, 60_000);
    const res = await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('60');
    expect(res.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: 'The AI provider is at its limit of 30 requests per minute for this service; retry in 60 s',
      policy: 'provider-rpm',
      retryAfter: 60,
    });
    expect(model.roundTrips).toBe(0);
    // The estimate went back to alice's bucket and month, and her lease came back with the response.
    expect(await remaining('ai-tokens', 'user:alice')).toBe(20_000);
    expect((await http().get('/ai/usage').set('x-api-key', 'demo-key-alice')).body.used).toBe(0);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(2);

    clock.advance(60_000);
    expect((await complete('demo-key-alice', { prompt: 'Hello', maxTokens: 16 })).status).toBe(200);
    expect(model.roundTrips).toBe(1);
  });

  it('POST /ai/complete: a client that goes away stops its model call and is charged nothing', async () => {
    await app.listen(0, '127.0.0.1');
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    model.holding = true;
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: '/ai/complete',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'demo-key-alice' },
    });
    const closed = new Promise((resolve) => req.once('close', resolve));
    req.on('error', () => undefined); // the socket is destroyed on purpose
    req.end(JSON.stringify({ prompt: 'Hello', maxTokens: 16 }));
    await waitFor(() => model.inFlight === 1);
    req.destroy();
    await closed;

    await waitFor(() => model.aborted === 1); // the provider's round trip was aborted, not awaited to its end
    await waitFor(async () => (await remaining('ai-tokens', 'user:alice')) === 20_000);
    expect((await http().get('/ai/usage').set('x-api-key', 'demo-key-alice')).body.used).toBe(0);
    expect(await remaining('ai-concurrent', 'user:alice')).toBe(2);
    expect(model.roundTrips).toBe(1);
  });

  it('POST /plans/upgrade: an upgrade lifts the per-user limit at once (an override), a downgrade restores it', async () => {
    const me = (apiKey: string) => http().get('/plans/me').set('x-api-key', apiKey);
    for (let i = 0; i < 100; i++) expect((await me('demo-key-alice')).status).toBe(200);
    expect((await me('demo-key-alice')).status).toBe(429);
    const upgrade = await http().post('/plans/upgrade').set('x-api-key', 'demo-key-alice');
    expect([upgrade.status, upgrade.body]).toEqual([201, { limit: 1000 }]);
    // The 100 already used stay counted: 900 more this minute.
    const after = await me('demo-key-alice');
    expect(after.status).toBe(200);
    expect(after.headers['ratelimit-policy']).toContain('"per-user";q=1000');
    expect((await me('demo-key-bob')).headers['ratelimit-policy']).toContain('"per-user";q=100;');
    const downgrade = await http().post('/plans/downgrade').set('x-api-key', 'demo-key-alice');
    expect([downgrade.status, downgrade.body]).toEqual([201, { removed: true }]);
    expect((await me('demo-key-alice')).status).toBe(429);
  });

  it('GET /reports/export: rows=40000 twice, the second gets 429 with Retry-After', async () => {
    expect((await http().get('/reports/export?rows=40000')).status).toBe(401);
    const first = await exportRows('40000');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ user: 'bob', rows: 40_000, file: 'report-bob-40000.csv' });
    expect(first.headers['ratelimit-policy']).toBe('"per-user";q=100;w=60, "export-rows";q=50000;w=3600');
    expect(first.headers['ratelimit']).toBe('"per-user";r=99;t=120, "export-rows";r=10000;t=2880');

    const second = await exportRows('40000');
    expect(second.status).toBe(429);
    // 30 000 rows short at 50 000 per hour: 36 minutes.
    expect(second.headers['retry-after']).toBe('2160');
    expect(second.body.policy).toBe('export-rows');
    expect(second.body.retryAfter).toBe(2160);
    // All or nothing: the denied request did not consume per-user either.
    expect(second.headers['ratelimit']).toBe('"per-user";r=99;t=120, "export-rows";r=10000;t=2160');

    // Smaller exports still fit, and other users have their own bucket.
    expect(item(await exportRows(undefined), 'export-rows')).toBe('"export-rows";r=9900;t=2888'); // 40 100 rows used;
    expect(item(await exportRows('40000', 'demo-key-alice'), 'export-rows')).toBe('"export-rows";r=10000;t=2880');
  });

  it('GET /reports/export: 400 for a bad rows, which costs nothing', async () => {
    for (const rows of ['abc', '-1', '1.5', '50001', '']) {
      const res = await exportRows(rows);
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('rows must be an integer from 0 to 50000 (default 100)');
      expect(item(res, 'export-rows')).toBe('"export-rows";r=50000;t=0');
    }
    expect((await http().get('/reports/export?rows=1&rows=2').set('x-api-key', 'demo-key-bob')).status).toBe(400);
    expect((await exportRows('0')).body.rows).toBe(0);
    expect(item(await exportRows('50000'), 'export-rows')).toBe('"export-rows";r=0;t=3600');
  });
});

describe('the sample app with its store down', () => {
  let app: INestApplication;
  const savedRedisUrl = process.env.REDIS_URL;
  beforeAll(async () => {
    delete process.env.REDIS_URL;
    const down = () => Promise.reject(new Error('store down'));
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RateLimitStore)
      .useValue({ consume: down, peek: down, refund: down, reset: down, charge: down })
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
    if (savedRedisUrl !== undefined) process.env.REDIS_URL = savedRedisUrl;
  });

  it('login fails closed: 503 with Retry-After', async () => {
    const res = await request(app.getHttpServer())
      .post('/auth/login')
      .send({ username: 'alice', password: 'correct-horse' });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.policy).toBe('login-account');
  });

  it('AI completions fail closed (503: their token policies are failMode closed); exports fail open (200)', async () => {
    const ai = await request(app.getHttpServer())
      .post('/ai/complete')
      .set('x-api-key', 'demo-key-alice')
      .send({ prompt: 'Hello', maxTokens: 16 });
    expect(ai.status).toBe(503);
    expect(ai.headers['retry-after']).toBe('1');
    expect(ai.body).toMatchObject({ statusCode: 503, policy: 'ai-tokens', retryAfter: 1 });

    const exported = await request(app.getHttpServer()).get('/reports/export').set('x-api-key', 'demo-key-bob');
    expect(exported.status).toBe(200);
    expect(exported.headers['ratelimit']).toBeUndefined();
  });
});

/** The memory store, failing every call that involves the provider's budget: the store is down for it alone. */
class ProviderBudgetDown extends MemoryRateLimitStore {
  override consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    if (items.some((i) => i.policy.name === PROVIDER_RPM.name)) return Promise.reject(new Error('store down'));
    return super.consume(items);
  }
}

describe("the sample app when the provider's budget cannot be read", () => {
  let app: INestApplication;
  let model: TestModel;
  beforeAll(async () => {
    delete process.env.REDIS_URL;
    model = new TestModel();
    const clock = new FakeClock(alignedStart(60_000)); // no refill between the charge and the check
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(clock)
      .overrideProvider(RateLimitStore)
      .useValue(new ProviderBudgetDown({ clock }))
      .overrideProvider(ModelApi)
      .useValue(model)
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(() => app.close());

  it('AI completions fail closed (503), without calling the provider, and charge nothing', async () => {
    const res = await request(app.getHttpServer())
      .post('/ai/complete')
      .set('x-api-key', 'demo-key-alice')
      .send({ prompt: 'Hello', maxTokens: 16 });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ statusCode: 503, code: 'RATE_LIMIT_UNAVAILABLE', policy: 'provider-rpm' });
    expect(model.roundTrips).toBe(0);
    expect((await app.get(RateLimitService).peek('ai-tokens', 'user:alice')).remaining).toBe(20_000);
  });
});
