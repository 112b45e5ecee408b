import { Controller, Get } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { jest } from '@jest/globals';

import { RateLimit, RateLimitModule, RateLimitService, RateLimitStore, RATE_LIMIT_CLOCK } from '../../lib/index.js';
import { FAKE_CLOCK_START, FakeClock, RateLimitTestingModule } from '../../lib/testing/index.js';

// Issue 19 (testing support): `nest-rate-limit/testing` — RateLimitTestingModule.forRoot(options?) is the module on
// the memory store with a FakeClock the test injects.

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ name: 'limited', algorithm: 'sliding-window-log', limit: 1, window: '10s', key: 'ip' })
  limited() {
    return 'ok';
  }
}

async function start(options?: Parameters<typeof RateLimitTestingModule.forRoot>[0]) {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitTestingModule.forRoot(options)],
    controllers: [LimitedController],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('RateLimitTestingModule', () => {
  it('decides on its FakeClock, which the test injects and moves', async () => {
    const app = await start();
    const clock = app.get(FakeClock);
    expect(app.get(RATE_LIMIT_CLOCK)).toBe(clock);
    expect(clock.now()).toBe(FAKE_CLOCK_START);
    await request(app.getHttpServer()).get('/limited').expect(200);
    await request(app.getHttpServer()).get('/limited').expect(429).expect('Retry-After', '10');
    clock.advance(9_999);
    await request(app.getHttpServer()).get('/limited').expect(429).expect('Retry-After', '1');
    clock.advance(1);
    await request(app.getHttpServer()).get('/limited').expect(200);
    await app.close();
  });

  it('gives each app a clock and a store of its own', async () => {
    const [a, b] = [await start(), await start()];
    expect(a.get(FakeClock)).not.toBe(b.get(FakeClock));
    await request(a.getHttpServer()).get('/limited').expect(200);
    await request(b.getHttpServer()).get('/limited').expect(200);
    a.get(FakeClock).advance(60_000);
    expect(b.get(FakeClock).now()).toBe(FAKE_CLOCK_START);
    await Promise.all([a.close(), b.close()]);
  });

  it("takes forRoot's options (here `defaults` and the legacy headers)", async () => {
    const app = await start({
      defaults: [{ name: 'everything', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' }],
      headers: 'legacy',
    });
    const res = await request(app.getHttpServer()).get('/limited').expect(200);
    expect(res.headers['x-ratelimit-limit']).toBeDefined();
    expect(await app.get(RateLimitService).resetAll()).toBe(2);
    await app.close();
  });

  it('gives its memory store the identity options (identitySecret, readableKeys), as the module would', async () => {
    const keysOf = async (options: Parameters<typeof RateLimitTestingModule.forRoot>[0]) => {
      const app = await start(options);
      await request(app.getHttpServer()).get('/limited').expect(200);
      const store = app.get<RateLimitStore>(RateLimitStore, { strict: false });
      const keys = [...(store as unknown as { entries: Map<string, unknown> }).entries.keys()];
      await app.close();
      return keys;
    };
    // readable keys show the shape of the policy's state (sliding window log of 10 s), which the hash covers otherwise
    expect(await keysOf({ readableKeys: true })).toEqual(['limited\nswl10s\nip:127.0.0.1']);
    const hashed = await keysOf({});
    expect(hashed).toEqual([expect.stringMatching(/^limited\n[\w-]{16}$/)]);
    expect(await keysOf({ identitySecret: 'a-secret-of-the-tests-own' })).not.toEqual(hashed);
  });

  it('FakeClock refuses a time that is not whole milliseconds', () => {
    expect(() => new FakeClock().advance(1.5)).toThrow(/FakeClock: ms must be whole milliseconds, got 1.5/);
    expect(() => new FakeClock().set(Number.NaN)).toThrow(/got NaN/);
    expect(new FakeClock(0).advance(-1).now()).toBe(-1);
  });

  // docs/testing.md says so: the module's default clock is Date.now(), which Jest's modern fake timers move.
  it("follows Jest's modern fake timers on its default clock", async () => {
    jest.useFakeTimers({ now: FAKE_CLOCK_START, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({})],
        controllers: [LimitedController],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      await request(app.getHttpServer()).get('/limited').expect(200);
      await request(app.getHttpServer()).get('/limited').expect(429).expect('Retry-After', '10');
      jest.setSystemTime(FAKE_CLOCK_START + 10_000);
      await request(app.getHttpServer()).get('/limited').expect(200);
      await app.close();
    } finally {
      jest.useRealTimers();
    }
  });
});
