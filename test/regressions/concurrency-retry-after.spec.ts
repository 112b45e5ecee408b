import type { AddressInfo, Server } from 'node:net';

import { jest } from '@jest/globals';
import { Controller, type INestApplication, Post } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';

import { CONCURRENCY_RETRY_MS } from '../../lib/algorithms/concurrency/concurrency.js';
import {
  RateLimit,
  type RateLimitDecision,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FakeClock } from '../../lib/testing/index.js';
import { startGraphQLApp } from '../support/graphql-app.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { ReferenceStore } from '../support/reference-store.js';
import { Gate, waitFor } from '../support/wait.js';
import { type StoreName, STORES, storeOptions, storeServers } from '../support/store-options.js';
import { TEST_START_MS } from '../support/time.js';

// Issue 18, item 5: a concurrency denial said `Retry-After: 300` (when the oldest lease of a '5m' lease window
// would expire), although the slot frees when the running request ends, milliseconds later. The wait is now
// at most CONCURRENCY_RETRY_MS, on every store, while the leases themselves still live the lease window.

const gate = new Gate();
const HELD = { name: 'one-at-a-time', algorithm: 'concurrency', limit: 1, window: '5m', key: 'ip' } as const;
const KEY = 'ip:127.0.0.1';

@Controller('work')
class WorkController {
  @Post()
  @RateLimit(HELD)
  async work() {
    await gate.pass();
    return { done: true };
  }
}

const servers = storeServers();

const urlOf = (app: INestApplication): string =>
  `http://127.0.0.1:${((app.getHttpServer() as Server).address() as AddressInfo).port}/work`;

/** An app of WorkController on `adapter` and `store`, listening: made before each test, closed after it. */
function workAppEachTest(adapter: AdapterName, store: StoreName): () => INestApplication {
  let app: INestApplication | undefined;
  beforeEach(async () => {
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot(storeOptions(store, servers))],
      controllers: [WorkController],
    }));
    await app.listen(0, '127.0.0.1');
  });
  afterEach(async () => {
    gate.open();
    await app?.close();
  });
  return () => {
    if (app === undefined) throw new Error('workAppEachTest: the app is made in beforeEach');
    return app;
  };
}

describe('regression: a concurrency denial tells the client to wait the lease time', () => {
  afterEach(() => gate.open());

  describe.each(ADAPTERS)('over HTTP (%s)', (adapter) => {
    describe.each(STORES)('on the %s store', (store) => {
      const app = workAppEachTest(adapter, store);

      it('answers a request refused while one runs with Retry-After: 1, not the 5 minute lease', async () => {
        const running = fetch(urlOf(app()), { method: 'POST' });
        await waitFor(() => gate.held === 1);

        const denied = await fetch(urlOf(app()), { method: 'POST' });
        expect(denied.status).toBe(429);
        expect(denied.headers.get('retry-after')).toBe('1');
        expect(denied.headers.get('ratelimit')).toBe('"one-at-a-time";r=0;t=1');
        expect(await denied.json()).toMatchObject({
          code: 'RATE_LIMITED',
          policy: 'one-at-a-time',
          retryAfter: 1,
          message: 'Rate limit "one-at-a-time" exceeded; retry in 1 s',
        });

        const service = app().get(RateLimitService);
        const consumed = await service.consume('one-at-a-time', KEY);
        expect(consumed.allowed).toBe(false);
        expect(consumed.retryAfterMs).toBeGreaterThan(0);
        expect(consumed.retryAfterMs).toBeLessThanOrEqual(CONCURRENCY_RETRY_MS);
        const [many] = await service.consumeMany([{ policy: 'one-at-a-time', key: KEY }]);
        expect(many?.retryAfterMs).toBe(CONCURRENCY_RETRY_MS);
        const peeked = await service.peek('one-at-a-time', KEY);
        expect(peeked).toMatchObject({ allowed: false, retryAfterMs: CONCURRENCY_RETRY_MS });
        // The lease itself still lives its window: a crashed holder's lease expires in 5 minutes, not 1 s.
        expect(peeked.resetMs).toBe(300_000);

        gate.open();
        expect((await running).status).toBe(201);
      });
    });

    it("says retryAfter: 1 in RFC 9457 problem details (errors: 'problem')", async () => {
      const { app } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot({ errors: 'problem' })],
        controllers: [WorkController],
      });
      try {
        await app.listen(0, '127.0.0.1');
        const running = fetch(urlOf(app), { method: 'POST' });
        await waitFor(() => gate.held === 1);
        const denied = await fetch(urlOf(app), { method: 'POST' });
        expect(denied.status).toBe(429);
        expect(denied.headers.get('retry-after')).toBe('1');
        expect(await denied.json()).toMatchObject({ 'violated-policies': ['one-at-a-time'], retryAfter: 1 });
        gate.open();
        expect((await running).status).toBe(201);
      } finally {
        gate.open();
        await app.close();
      }
    });
  });

  describe.each(STORES)('acquire() on the %s store', (store) => {
    const app = workAppEachTest('express', store);

    it('lets acquire() wait for the running request to end instead of refusing at once', async () => {
      const running = fetch(urlOf(app()), { method: 'POST' });
      await waitFor(() => gate.held === 1);
      const engine = app().get(RateLimiter).engine;
      const asked = jest.spyOn(engine, 'consumeAcross');

      // With the lease time as its wait (300 s, past maxWaitMs), acquire() would reject without waiting.
      const acquired = app().get(RateLimitService).acquire('one-at-a-time', KEY, { maxWaitMs: 10_000 });
      await waitFor(() => asked.mock.results.length === 1);
      const first = await (asked.mock.results[0]?.value as Promise<RateLimitDecision[]>);
      expect(first[0]).toMatchObject({ allowed: false, retryAfterMs: CONCURRENCY_RETRY_MS });

      gate.open();
      expect((await running).status).toBe(201);
      await app().get(RateLimiter).refundsSettled();
      // The waiter asks again about a second after its denial, and gets the slot the request gave back.
      expect(await acquired).toMatchObject({ allowed: true });
      expect(asked).toHaveBeenCalledTimes(2);
      await app().get(RateLimitService).refund('one-at-a-time', KEY, 1);
    });
  });

  it('says retryAfter: 1 in the GraphQL error', async () => {
    @Resolver()
    class GenerateResolver {
      @Query(() => String, { nullable: true })
      @RateLimit({ ...HELD, name: 'gql-one-at-a-time' })
      async generate(): Promise<string> {
        await gate.pass();
        return 'generated';
      }
    }
    const gql = await startGraphQLApp('apollo', { resolvers: [GenerateResolver], rateLimit: {} });
    try {
      const first = gql.gql('{ generate }');
      await waitFor(() => gate.held === 1);
      const second = await gql.gql('{ generate }');
      expect(second.errors?.[0]?.extensions).toMatchObject({
        code: 'RATE_LIMITED',
        policy: 'gql-one-at-a-time',
        retryAfter: 1,
      });
      gate.open();
      expect((await first).data).toEqual({ generate: 'generated' });
    } finally {
      gate.open();
      await gql.close();
    }
  });

  // `custom`: a store of the user's own (RateLimitModuleOptions.store) that decides as the algorithms do.
  describe.each([...STORES, 'custom'] as const)('with a fake clock, on the %s store', (store) => {
    const SHORT: RateLimitPolicy = { name: 'short-lease', algorithm: 'concurrency', limit: 1, window: '5s' };

    it('waits until the oldest lease expires when that is nearer than 1 s, else 1 s', async () => {
      const clock = new FakeClock(TEST_START_MS);
      const options = store === 'custom' ? { store: new ReferenceStore(clock) } : storeOptions(store, servers);
      const { app } = await createApp('express', { imports: [RateLimitModule.forRoot(options)] }, clock);
      try {
        const service = app.get(RateLimitService);
        expect(await service.consume(SHORT, 'k')).toMatchObject({ allowed: true });
        clock.advance(1_000);
        // The lease expires in 4 s: the wait is cut to 1 s.
        expect(await service.consume(SHORT, 'k')).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
        expect(await service.peek(SHORT, 'k')).toMatchObject({ allowed: false, retryAfterMs: 1_000 });
        clock.advance(3_600);
        // It expires in 400 ms: that is the wait, for consume, peek and acquire alike.
        expect(await service.consume(SHORT, 'k')).toMatchObject({ allowed: false, retryAfterMs: 400 });
        expect(await service.peek(SHORT, 'k')).toMatchObject({ allowed: false, retryAfterMs: 400 });
        const refused = await service.acquire(SHORT, 'k', { maxWaitMs: 0 }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(RateLimitExceededException);
        expect((refused as RateLimitExceededException).decision.retryAfterMs).toBe(400);
        clock.advance(400);
        // A lease never given back (its holder crashed) still expires at the end of its window, not sooner.
        expect(await service.consume(SHORT, 'k')).toMatchObject({ allowed: true });
      } finally {
        await app.close();
      }
    });
  });
});
