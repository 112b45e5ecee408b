import { jest } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';

import {
  type Clock,
  MemoryRateLimitStore,
  RATE_LIMIT_CLOCK,
  type RateLimitDecision,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitPolicyError,
  RateLimitService,
  type RateLimitStoreItem,
  RateLimitUnavailableException,
  validatePolicy,
} from '../../lib/index.js';
import { AcquireQueues } from '../../lib/service/acquire-queue.js';
import { nth } from '../support/harness.js';
import { track } from '../support/wait.js';
import { TEST_START_MS } from '../support/time.js';

/** The memory store, counting its consume calls: when each was made (store time), for what, and the answer. */
class CountingStore extends MemoryRateLimitStore {
  readonly calls: { atMs: number; key: string; cost: number; allowed: boolean }[] = [];

  constructor(private readonly time: Clock) {
    super({ clock: time });
  }

  override async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    const atMs = this.time.now();
    const decisions = await super.consume(items);
    const item = nth(items, 0);
    this.calls.push({ atMs, key: item.key, cost: item.cost, allowed: nth(decisions, 0).allowed });
    return decisions;
  }
}

// Jest's fake timers move Date.now() and performance.now() together: the store's clock (this one) and the
// waiters' timers and deadlines follow one fake time, so no test sleeps and every count is exact.
const fakeTime: Clock = { now: () => Date.now() };

/** One per 100 ms (GCRA, burst 1): a denied request's retryAfterMs is exactly 100 after the last admission. */
const perTenth: RateLimitPolicy = { name: 'provider', algorithm: 'gcra', limit: 1, window: 100 };
/** A denied head sleeps the retry-after and a 1 ms margin (a timer may fire a millisecond early by the store's clock). */
const WAKE = 100 + 1;

const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('RateLimitService.acquire', () => {
  let moduleRef: TestingModule;
  let service: RateLimitService;
  let store: CountingStore;
  let closed: boolean;

  beforeEach(async () => {
    jest.useFakeTimers({ now: TEST_START_MS, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    store = new CountingStore(fakeTime);
    moduleRef = await Test.createTestingModule({ imports: [RateLimitModule.forRoot({ store })] })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(fakeTime)
      .compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    service = moduleRef.get(RateLimitService);
    closed = false;
  });
  afterEach(async () => {
    if (!closed) await moduleRef.close();
    jest.useRealTimers();
  });

  it('resolves at once with the allowed decision when the units are free: one store call', async () => {
    const d = await service.acquire(perTenth, 'openai', { maxWaitMs: 1000 });
    expect(d).toMatchObject({ allowed: true, policy: 'provider', remaining: 0 });
    expect(store.calls).toHaveLength(1);
  });

  it('sleeps the retry-after, with one store call when denied and one when it has passed', async () => {
    await service.consume(perTenth, 'openai');
    const waiting = track(service.acquire(perTenth, 'openai', { maxWaitMs: 1000 }));
    await advance(WAKE - 1);
    expect(waiting.done).toBe(false);
    expect(store.calls.map((c) => c.allowed)).toEqual([true, false]);
    await advance(1);
    expect(waiting.value).toMatchObject({ allowed: true });
    expect(store.calls.map((c) => [c.atMs - TEST_START_MS, c.allowed])).toEqual([
      [0, true],
      [0, false],
      [WAKE, true],
    ]);
  });

  it('serves the waiters of one key first come, first served, only the head calling the store', async () => {
    const order: string[] = [];
    const all = ['a', 'b', 'c', 'd', 'e'].map((name) =>
      service.acquire(perTenth, 'openai', { maxWaitMs: 10_000 }).then(() => order.push(name)),
    );
    await advance(0);
    // a is admitted, b asked once and sleeps; c, d and e have not called the store at all
    expect(store.calls.map((c) => c.allowed)).toEqual([true, false]);
    await advance(4 * WAKE);
    await Promise.all(all);
    expect(order).toEqual(['a', 'b', 'c', 'd', 'e']);
    // b..e each: one denial when it reached the head, one admission a retry-after later
    expect(store.calls.map((c) => [c.atMs - TEST_START_MS, c.allowed])).toEqual([
      [0, true],
      [0, false],
      [WAKE, true],
      [WAKE, false],
      [2 * WAKE, true],
      [2 * WAKE, false],
      [3 * WAKE, true],
      [3 * WAKE, false],
      [4 * WAKE, true],
    ]);
  });

  /** Queues `count` acquires of `fairKey` on the provider's budget; each pushes its name to `order` when served. */
  const queue = (order: string[], fairKey: string, count: number, opts: { cost?: number; weight?: number } = {}) =>
    Array.from({ length: count }, (_, i) =>
      service
        .acquire(perTenth, 'openai', { maxWaitMs: 60_000, fairKey, ...opts })
        .then(() => order.push(`${fairKey}${i + 1}`)),
    );

  it('serves two fair keys in turn: a tenant queued behind a burst of another waits for one of its requests, not all', async () => {
    const order: string[] = [];
    const a = queue(order, 'a', 6);
    await advance(0); // a1 admitted; a2 asked once and sleeps
    const b = queue(order, 'b', 2);
    await advance(8 * WAKE);
    await Promise.all([...a, ...b]);
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2', 'a3', 'a4', 'a5', 'a6']);
    // still one store call per retry-after: only the head asks, whichever tenant it is
    expect(store.calls.filter((c) => c.allowed)).toHaveLength(8);
    expect(store.calls.filter((c) => !c.allowed)).toHaveLength(7);
  });

  it('gives fair keys turns in proportion to their weights', async () => {
    const order: string[] = [];
    const heavy = queue(order, 'h', 6, { weight: 2 });
    const light = queue(order, 'l', 3);
    await advance(9 * WAKE);
    await Promise.all([...heavy, ...light]);
    expect(order).toEqual(['h1', 'l1', 'h2', 'h3', 'l2', 'h4', 'h5', 'l3', 'h6']);
  });

  it('remembers a fair key served a moment ago: one request at a time, it still takes turns with a queue', async () => {
    const order: string[] = [];
    const b = queue(order, 'b', 3);
    // tenant a sends its next request as soon as the last one is served: each time, it has no waiter queued
    const a = (async () => {
      for (let i = 1; i <= 5; i++) {
        await service.acquire(perTenth, 'openai', { maxWaitMs: 60_000, fairKey: 'a' });
        order.push(`a${i}`);
      }
    })();
    await advance(8 * WAKE);
    await Promise.all([...b, a]);
    expect(order).toEqual(['b1', 'a1', 'b2', 'a2', 'b3', 'a3', 'a4', 'a5']);
  });

  it('keeps first come, first served without fair keys, and within one', async () => {
    const order: string[] = [];
    const same = queue(order, 't', 4);
    await advance(4 * WAKE);
    await Promise.all(same);
    expect(order).toEqual(['t1', 't2', 't3', 't4']);
  });

  it('lets no later waiter overtake the head, even when its smaller cost would fit now', async () => {
    const bucket: RateLimitPolicy = { name: 'tokens', algorithm: 'token-bucket', limit: 10, window: 1000 };
    await service.consume(bucket, 'k', { cost: 8 }); // 2 left, one more every 100 ms
    const order: string[] = [];
    const big = service.acquire(bucket, 'k', { cost: 5, maxWaitMs: 1000 }).then(() => order.push('big'));
    const small = service.acquire(bucket, 'k', { cost: 1, maxWaitMs: 1000 }).then(() => order.push('small'));
    await advance(300);
    expect(order).toEqual([]);
    expect(store.calls.filter((c) => c.cost === 1)).toEqual([]);
    await advance(1);
    expect(order).toEqual(['big']);
    await advance(WAKE);
    await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(store.calls.map((c) => [c.cost, c.allowed])).toEqual([
      [8, true],
      [5, false],
      [5, true],
      [1, false], // the bucket is empty after the big one: the small one waits its own 100 ms
      [1, true],
    ]);
  });

  it('keeps one queue per policy and key: another key is not held up', async () => {
    await service.consume(perTenth, 'a');
    const a = track(service.acquire(perTenth, 'a', { maxWaitMs: 1000 }));
    expect(await service.acquire(perTenth, 'b', { maxWaitMs: 1000 })).toMatchObject({ allowed: true });
    expect(a.done).toBe(false);
    await advance(WAKE);
    expect(a.value).toMatchObject({ allowed: true });
  });

  it('tries once with maxWaitMs 0', async () => {
    expect(await service.acquire(perTenth, 'k', { maxWaitMs: 0 })).toMatchObject({ allowed: true });
    const denied = service.acquire(perTenth, 'k', { maxWaitMs: 0 });
    await expect(denied).rejects.toBeInstanceOf(RateLimitExceededException);
    await expect(denied).rejects.toMatchObject({ retryAfter: 1, decision: { allowed: false, retryAfterMs: 100 } });
    expect(store.calls).toHaveLength(2);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('rejects at once, without sleeping in vain, when the retry-after already ends past maxWaitMs', async () => {
    await service.consume(perTenth, 'k');
    const early = track(service.acquire(perTenth, 'k', { maxWaitMs: 99 }));
    await advance(0);
    expect(early.error).toBeInstanceOf(RateLimitExceededException);
    expect((early.error as RateLimitExceededException).decision.retryAfterMs).toBe(100);
    expect(jest.getTimerCount()).toBe(0);
    // a retry-after that ends exactly at maxWaitMs is worth sleeping (the 1 ms margin comes on top)
    const exact = track(service.acquire(perTenth, 'k', { maxWaitMs: 100 }));
    await advance(WAKE);
    expect(exact.value).toMatchObject({ allowed: true });
  });

  it('refuses a queued waiter whose deadline comes before the head wakes, without a store call', async () => {
    await service.consume(perTenth, 'k');
    const head = track(service.acquire(perTenth, 'k', { maxWaitMs: 1000 }));
    const hopeless = track(service.acquire(perTenth, 'k', { maxWaitMs: 50 }));
    const later = track(service.acquire(perTenth, 'k', { maxWaitMs: 150 }));
    await advance(0);
    expect(hopeless.error).toBeInstanceOf(RateLimitExceededException);
    // the least it would have waited: until the head wakes
    expect((hopeless.error as RateLimitExceededException).decision).toMatchObject({
      allowed: false,
      retryAfterMs: WAKE,
    });
    await advance(WAKE);
    expect(head.value).toMatchObject({ allowed: true });
    // `later` asked when the head was served, and was told 100 ms more: past its deadline, so refused now
    expect(later.error).toBeInstanceOf(RateLimitExceededException);
    expect(store.calls.map((c) => [c.atMs - TEST_START_MS, c.allowed])).toEqual([
      [0, true],
      [0, false],
      [WAKE, true],
      [WAKE, false],
    ]);
  });

  it('rejects with RateLimitExceededException when another client takes the units it woke up for', async () => {
    await service.consume(perTenth, 'k');
    // another instance's request, as soon as the unit is free: just before the waiter wakes
    setTimeout(() => void service.consume(perTenth, 'k'), 100);
    const waiting = track(service.acquire(perTenth, 'k', { maxWaitMs: 150 }));
    await advance(WAKE);
    expect(waiting.error).toBeInstanceOf(RateLimitExceededException);
    expect((waiting.error as RateLimitExceededException).decision).toMatchObject({ retryAfterMs: 99 });
    expect(store.calls.map((c) => [c.atMs - TEST_START_MS, c.allowed])).toEqual([
      [0, true],
      [0, false],
      [100, true],
      [WAKE, false],
    ]);
  });

  it('rejects a cost that can never fit at once, and serves the next waiter', async () => {
    const never = track(service.acquire(perTenth, 'k', { cost: 2, maxWaitMs: 60_000 }));
    const next = track(service.acquire(perTenth, 'k', { maxWaitMs: 0 }));
    await advance(0);
    expect(never.error).toBeInstanceOf(RateLimitExceededException);
    const error = never.error as RateLimitExceededException;
    expect(error.retryAfter).toBeNull();
    expect(error.decision.retryAfterMs).toBe(Infinity);
    expect(error.message).toMatch(/cost 2 is larger than the capacity 1 .* can never be allowed/);
    expect(next.value).toMatchObject({ allowed: true });
    expect(store.calls).toHaveLength(2);
  });

  it('rejects with the reason of an already aborted signal, without a store call', async () => {
    const reason = new Error('the user went away');
    await expect(service.acquire(perTenth, 'k', { maxWaitMs: 1000, signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    expect(store.calls).toEqual([]);
  });

  it('aborting the sleeping head rejects it and lets the next waiter ask at once', async () => {
    await service.consume(perTenth, 'k');
    const controller = new AbortController();
    const head = track(service.acquire(perTenth, 'k', { maxWaitMs: 1000, signal: controller.signal }));
    const next = track(service.acquire(perTenth, 'k', { maxWaitMs: 1000 }));
    await advance(50);
    expect(store.calls).toHaveLength(2);
    controller.abort('cancelled');
    await advance(0);
    expect(head.error).toBe('cancelled');
    expect(store.calls.map((c) => [c.atMs - TEST_START_MS, c.allowed])).toEqual([
      [0, true],
      [0, false],
      [50, false], // the next waiter, now the head, asked without waiting for the aborted one's timer
    ]);
    await advance(50);
    expect(next.done).toBe(false);
    await advance(1);
    expect(next.value).toMatchObject({ allowed: true });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('aborting a queued waiter takes it out of the queue; the others keep their order', async () => {
    await service.consume(perTenth, 'k');
    const controller = new AbortController();
    const order: string[] = [];
    const b = service.acquire(perTenth, 'k', { maxWaitMs: 1000 }).then(() => order.push('b'));
    const c = track(service.acquire(perTenth, 'k', { maxWaitMs: 1000, signal: controller.signal }));
    const d = service.acquire(perTenth, 'k', { maxWaitMs: 1000 }).then(() => order.push('d'));
    await advance(10);
    controller.abort();
    await advance(0);
    expect((c.error as Error).name).toBe('AbortError');
    await advance(2 * WAKE);
    await Promise.all([b, d]);
    expect(order).toEqual(['b', 'd']);
    expect(store.calls.filter((call) => call.allowed).map((call) => call.atMs - TEST_START_MS)).toEqual([
      0,
      WAKE,
      2 * WAKE,
    ]);
  });

  it('aborting while the store call is on its way rejects at once and gives the units back', async () => {
    const controller = new AbortController();
    const aborted = track(service.acquire(perTenth, 'k', { maxWaitMs: 1000, signal: controller.signal }));
    controller.abort('stop');
    await advance(0);
    expect(aborted.error).toBe('stop');
    expect(store.calls).toMatchObject([{ allowed: true }]);
    expect(await service.peek(perTenth, 'k')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('rejects bad arguments with errors that say which field of which policy, before any store call', async () => {
    const acquire = (opts: unknown, key = 'k') => service.acquire(perTenth, key, opts as { maxWaitMs: number });
    await expect(acquire(undefined)).rejects.toThrow(
      'Invalid rate-limit policy "provider" (declared on RateLimitService), field "maxWaitMs": acquire() needs options { maxWaitMs, cost?, signal?, fairKey?, weight? }, got undefined',
    );
    await expect(acquire({})).rejects.toThrow(
      'field "maxWaitMs": must be a whole number of milliseconds >= 0 (0 tries once), got undefined',
    );
    for (const bad of [-1, 1.5, Infinity, NaN, '100']) {
      await expect(acquire({ maxWaitMs: bad })).rejects.toThrow(
        new RegExp(`field "maxWaitMs": must be a whole number .*, got ${bad === '100' ? '"100"' : bad}$`),
      );
    }
    await expect(acquire({ maxWaitMs: 10, signal: {} })).rejects.toThrow(
      'field "signal": must be an AbortSignal, got an object',
    );
    for (const fairKey of ['', 7, {}]) {
      await expect(acquire({ maxWaitMs: 10, fairKey })).rejects.toThrow(
        /field "fairKey": must be a non-empty string \(whose turn the waiter takes\), got /,
      );
    }
    for (const weight of [0, -1, Infinity, NaN, '2']) {
      await expect(acquire({ maxWaitMs: 10, fairKey: 't', weight })).rejects.toThrow(
        /field "weight": must be a finite number > 0, got /,
      );
    }
    await expect(acquire({ maxWaitMs: 10, weight: 2 })).rejects.toThrow(
      'field "weight": needs a fairKey: it weighs one fair key against the others',
    );
    await expect(acquire({ maxWaitMs: 10, cost: -1 })).rejects.toThrow(
      'field "cost": cost must be a non-negative integer, got -1',
    );
    await expect(acquire({ maxWaitMs: 10 }, '')).rejects.toThrow('field "key": key must be a non-empty string');
    await expect(service.acquire('nope', 'k', { maxWaitMs: 10 })).rejects.toThrow(
      /policy "nope" \(declared on RateLimitService\): no policy of that name/,
    );
    await expect(acquire({ maxWaitMs: -5 })).rejects.toBeInstanceOf(RateLimitPolicyError);
    expect(store.calls).toEqual([]);
  });

  it('rejects every pending waiter with RateLimitUnavailableException on shutdown, and later calls at once', async () => {
    await service.consume(perTenth, 'k');
    const sleeping = track(service.acquire(perTenth, 'k', { maxWaitMs: 60_000 }));
    const queued = track(service.acquire(perTenth, 'k', { maxWaitMs: 60_000 }));
    await advance(10);
    await moduleRef.close();
    closed = true;
    for (const waiter of [sleeping, queued]) {
      expect(waiter.error).toBeInstanceOf(RateLimitUnavailableException);
      expect((waiter.error as RateLimitUnavailableException).getStatus()).toBe(503);
    }
    expect(jest.getTimerCount()).toBe(0);
    await expect(service.acquire(perTenth, 'k', { maxWaitMs: 1000 })).rejects.toBeInstanceOf(
      RateLimitUnavailableException,
    );
    expect(store.calls).toHaveLength(2);
  });
});

describe('AcquireQueues', () => {
  it('forgets a key once its last waiter is gone, however it went', async () => {
    jest.useFakeTimers({ now: TEST_START_MS, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const memory = new MemoryRateLimitStore({ clock: fakeTime });
      const policy = validatePolicy(perTenth);
      const queues = new AcquireQueues({
        consume: async (item) => nth(await memory.consume([item]), 0),
        refund: (item) => memory.refund([item]),
      });
      const controllers: AbortController[] = [];
      const signal = () => {
        const controller = new AbortController();
        controllers.push(controller);
        return controller.signal;
      };
      const outcomes = Array.from({ length: 300 }, (_, i) =>
        queues
          .acquire({
            policy,
            key: `k${i % 100}`,
            cost: 1,
            maxWaitMs: i % 3 === 2 ? 0 : 1000,
            signal: i % 5 === 4 ? signal() : undefined,
          })
          .then(
            () => 'admitted',
            (error: unknown) => (error instanceof RateLimitExceededException ? 'refused' : 'aborted'),
          ),
      );
      await advance(50);
      expect(queues.size).toBe(100);
      controllers.forEach((controller) => controller.abort());
      await advance(2 * WAKE);
      const counts = (await Promise.all(outcomes)).reduce<Record<string, number>>(
        (acc, o) => ({ ...acc, [o]: (acc[o] ?? 0) + 1 }),
        {},
      );
      expect((counts.admitted ?? 0) + (counts.refused ?? 0) + (counts.aborted ?? 0)).toBe(300);
      expect(counts.aborted).toBeGreaterThan(0);
      expect(queues.size).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
