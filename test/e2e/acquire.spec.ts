import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { Controller, Get, type INestApplication, Query } from '@nestjs/common';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimit,
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { mostInAnyWindow } from '../support/admissions.js';
import { nth } from '../support/harness.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

/**
 * The wall clock, keeping its last reading (lastReadMs()): waiting takes real (short) time here. Frozen, it stays
 * at its last reading, for a test whose budget must not refill however slowly a loaded machine runs it.
 */
class WallClock extends FakeClock {
  frozen = false;
  override now(): number {
    if (!this.frozen) this.set(Date.now());
    return this.lastReadMs();
  }
  /** The last reading, without reading the wall again. */
  lastReadMs(): number {
    return super.now();
  }
}

/** The memory store, noting when it logged each admission of the provider's key (store time). */
class AdmissionLog extends MemoryRateLimitStore {
  readonly admittedAtMs: number[] = [];
  readonly calls: boolean[] = [];

  constructor(private readonly wall: WallClock) {
    super({ clock: wall });
  }

  override async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    const decided = super.consume(items); // reads the clock, and decides, before it returns
    const nowMs = this.wall.lastReadMs();
    const decisions = await decided;
    items.forEach(({ key, policy }, i) => {
      if (key !== 'provider') return;
      const decision = nth(decisions, i);
      this.calls.push(decision.allowed);
      // a sliding log's newest entry, this admission, is resetMs - windowMs from now
      if (decision.allowed) this.admittedAtMs.push(nowMs + decision.resetMs - policy.windowMs);
    });
    return decisions;
  }
}

/** An AI provider's budget, shared by every caller: 2 calls per 200 ms; and a batch job's, 1 per hour. */
const providerRpm: RateLimitPolicy = {
  name: 'provider-rpm',
  algorithm: 'sliding-window-log',
  limit: 2,
  window: 200,
  cost: 0,
};
const batch: RateLimitPolicy = { name: 'batch', algorithm: 'fixed-window', limit: 1, window: '1h', cost: 0 };

@Controller()
class ProviderController {
  constructor(private readonly rateLimits: RateLimitService) {}

  /** Declared with cost 0 so that the service can name the policies; the calls wait for the provider's budget. */
  @Get('complete')
  @RateLimit([providerRpm, batch])
  async complete(@Query('wait') wait: string, @Query('policy') policy = 'provider-rpm') {
    const decision = await this.rateLimits.acquire(policy, 'provider', { maxWaitMs: Number(wait) });
    return { remaining: decision.remaining };
  }
}

describe.each(ADAPTERS)('acquire() in a Nest app on %s', (adapter) => {
  let app: INestApplication;
  let store: AdmissionLog;
  let open: boolean;
  let clock: WallClock;
  beforeEach(async () => {
    clock = new WallClock();
    store = new AdmissionLog(clock);
    ({ app } = await createApp(
      adapter,
      { imports: [RateLimitModule.forRoot({ store })], controllers: [ProviderController] },
      clock,
    ));
    open = true;
  });
  afterEach(async () => {
    if (open) await app.close();
  });
  const get = (path: string) => request(app.getHttpServer()).get(path);

  it('makes concurrent calls wait for the shared budget instead of answering 429', async () => {
    const responses = await Promise.all(Array.from({ length: 6 }, () => get('/complete?wait=10000')));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(store.admittedAtMs).toHaveLength(6);
    expect(mostInAnyWindow(store.admittedAtMs, 200)).toBe(2);
  });

  it('answers 429 with Retry-After, at once, when the wait would pass maxWaitMs', async () => {
    const service = app.get(RateLimitService);
    clock.now();
    clock.frozen = true; // the 200 ms window must not pass between the two calls on a slow machine
    await service.consume('provider-rpm', 'provider', { cost: 2 });
    const res = await get('/complete?wait=50');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED', policy: 'provider-rpm', retryAfter: 1 });
    expect(store.calls).toEqual([true, false]); // asked once, and did not sleep: 200 ms is past 50
  });

  it('answers a call still waiting at shutdown with 503 instead of leaving it hanging', async () => {
    const service = app.get(RateLimitService);
    await service.consume('batch', 'provider');
    const waiting = get('/complete?policy=batch&wait=3600000').then((res) => res);
    while (store.calls.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await app.close();
    open = false;
    const res = await waiting;
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'RATE_LIMIT_UNAVAILABLE', policy: 'batch' });
  });
});

describe('a waiting acquire()', () => {
  it('keeps the process alive until it is served, like pending I/O', async () => {
    const script = fileURLToPath(new URL('../support/acquire-alive.mjs', import.meta.url));
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect({ code, out }).toEqual({ code: 0, out: 'admitted\n' });
  });
});
