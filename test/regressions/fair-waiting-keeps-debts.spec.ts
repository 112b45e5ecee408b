import { jest } from '@jest/globals';

import { type Clock, MemoryRateLimitStore, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { AcquireQueues } from '../../lib/service/acquire-queue.js';
import { nth } from '../support/harness.js';
import { TEST_START_MS } from '../support/time.js';

// Issue 41, finding 6: a waiter that left the fair order without being served (aborted, refused) still pushed
// its fair key's turn forward. After 30 of tenant A's waiters were aborted behind a sleeping head, A and B each
// queued 8 and A was served after all of B: `BBBBBBBBAAAAAAAA`. A waiter that leaves now takes its share back.

// Jest's fake timers move Date.now() and performance.now() together: the store's clock and the waiters' timers.
const fakeTime: Clock = { now: () => Date.now() };
/** One per 100 ms (GCRA, burst 1): a sleeping head wakes 100 ms (and the 1 ms margin) after a denial. */
const perTenth: RateLimitPolicy = { name: 'provider', algorithm: 'gcra', limit: 1, window: 100 };
const WAKE = 100 + 1;
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);

describe('fair waiting keeps no debts', () => {
  let queues: AcquireQueues;
  let memory: MemoryRateLimitStore;
  const policy = validatePolicy(perTenth);

  beforeEach(() => {
    jest.useFakeTimers({ now: TEST_START_MS, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    memory = new MemoryRateLimitStore({ clock: fakeTime });
    queues = new AcquireQueues({
      consume: async (item) => nth(await memory.consume([item]), 0),
      refund: (item) => memory.refund([item]),
    });
  });
  afterEach(() => {
    queues.close();
    jest.useRealTimers();
  });

  /** Queues `count` waiters of `fairKey`; each pushes its fair key's letter to `order` when served. */
  const queue = (order: string[], fairKey: string, count: number) =>
    Array.from({ length: count }, () =>
      queues
        .acquire({ policy, key: 'openai', cost: 1, maxWaitMs: 60_000, fairKey })
        .then(() => order.push(fairKey.toUpperCase())),
    );

  /**
   * Queues `count` waiters of `fairKey` that leave unserved: `aborted` ones when `leave()` is called, `refused`
   * ones at once (their deadline comes before the sleeping head wakes). Resolves to what became of each.
   */
  function leaving(fairKey: string, count: number, how: 'aborted' | 'refused') {
    const controllers = Array.from({ length: count }, () => new AbortController());
    const outcomes = controllers.map((controller) =>
      queues
        .acquire({
          policy,
          key: 'openai',
          cost: 1,
          maxWaitMs: how === 'refused' ? 50 : 60_000,
          signal: controller.signal,
          fairKey,
        })
        .then(
          () => 'served',
          () => 'left',
        ),
    );
    return { leave: () => controllers.forEach((controller) => controller.abort()), outcomes: Promise.all(outcomes) };
  }

  /** The budget is spent and tenant C's waiter sleeps at the head: the queue stays busy while A's waiters leave. */
  async function busyQueue(order: string[]): Promise<Promise<number>[]> {
    await memory.consume([{ policy, key: 'openai', cost: 1 }]);
    const c = queue(order, 'c', 1);
    await advance(0);
    return c;
  }

  it.each(['aborted', 'refused'] as const)(
    '30 waiters of tenant A %s leave A its turn: A and B then take turns',
    async (how) => {
      const order: string[] = [];
      const c = await busyQueue(order);
      const left = leaving('a', 30, how);
      left.leave();
      expect(await left.outcomes).toEqual(Array(30).fill('left'));
      const served = [...queue(order, 'a', 8), ...queue(order, 'b', 8)];
      await advance(17 * WAKE);
      await Promise.all([...c, ...served]);
      expect(order.join('')).toBe('CABABABABABABABAB');
    },
  );

  it("gives the turns of a tenant's waiters that left to its waiters queued behind them", async () => {
    const order: string[] = [];
    const c = await busyQueue(order);
    const left = leaving('a', 22, 'aborted');
    const a = queue(order, 'a', 8);
    const b = queue(order, 'b', 8);
    left.leave();
    expect(await left.outcomes).toEqual(Array(22).fill('left'));
    await advance(17 * WAKE);
    await Promise.all([...c, ...a, ...b]);
    expect(order.join('')).toBe('CABABABABABABABAB');
  });
});
