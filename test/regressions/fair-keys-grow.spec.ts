import { jest } from '@jest/globals';

import { type Clock, MemoryRateLimitStore, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { AcquireQueues } from '../../lib/service/acquire-queue.js';
import { REMEMBERED_FAIR_KEYS } from '../../lib/service/fair-order.js';
import { nth } from '../support/harness.js';
import { TEST_START_MS } from '../support/time.js';
import { track } from '../support/wait.js';

// Issue 41, finding 6: the fair order of a busy queue kept one entry per fair key it had ever seen (about 10 MB
// per 50,000 keys refused behind one waiter), freed only when the queue emptied. It now keeps the fair keys
// with waiters, and at most REMEMBERED_FAIR_KEYS of those without, however many pass through.

const fakeTime: Clock = { now: () => Date.now() };
const KEYS = 50_000;

describe('the fair keys of a busy queue', () => {
  let queues: AcquireQueues;
  let memory: MemoryRateLimitStore;

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

  it(`are not kept for ${KEYS} keys refused or aborted behind one waiter that stays`, async () => {
    // one per 100 ms: the staying waiter sleeps at the head for 101 ms, and every other waiter queues behind it
    const policy = validatePolicy({ name: 'provider', algorithm: 'gcra', limit: 1, window: 100 } as RateLimitPolicy);
    await memory.consume([{ policy, key: 'openai', cost: 1 }]);
    const stays = track(queues.acquire({ policy, key: 'openai', cost: 1, maxWaitMs: 60_000, fairKey: 'stays' }));
    await jest.advanceTimersByTimeAsync(0);
    const outcomes: Promise<string>[] = [];
    for (let i = 0; i < KEYS; i++) {
      const controller = new AbortController();
      const acquired = queues.acquire({
        policy,
        key: 'openai',
        cost: 1,
        // odd ones: a deadline before the head wakes, refused at once; even ones: aborted
        maxWaitMs: i % 2 === 1 ? 50 : 60_000,
        signal: controller.signal,
        fairKey: `tenant-${i}`,
      });
      outcomes.push(
        acquired.then(
          () => 'served',
          () => 'left',
        ),
      );
      controller.abort();
    }
    expect(new Set(await Promise.all(outcomes))).toEqual(new Set(['left']));
    expect(queues.size).toBe(1);
    expect(queues.fairKeys).toBe(1); // the waiter that stays
    await jest.advanceTimersByTimeAsync(101);
    expect(stays.value).toMatchObject({ allowed: true });
    expect(queues.fairKeys).toBe(0);
  });

  it(`are bounded for ${KEYS} keys served while the queue stays busy`, async () => {
    // a budget the 50,000 fit in, one unit each; then a cost that does not fit: its waiter sleeps at the head
    const policy = validatePolicy({
      name: 'tokens',
      algorithm: 'token-bucket',
      limit: KEYS + 10,
      window: '1h',
    } as RateLimitPolicy);
    let served = 0;
    for (let i = 0; i < KEYS; i++) {
      void queues
        .acquire({ policy, key: 'openai', cost: 1, maxWaitMs: 60_000, fairKey: `tenant-${i}` })
        .then(() => served++);
    }
    const stays = queues
      .acquire({ policy, key: 'openai', cost: 100, maxWaitMs: 3_600_000, fairKey: 'stays' })
      .catch(() => undefined);
    while (served < KEYS) await new Promise((resolve) => setImmediate(resolve));
    expect(queues.size).toBe(1);
    expect(queues.fairKeys).toBeLessThanOrEqual(REMEMBERED_FAIR_KEYS + 1);
    queues.close();
    await stays;
    expect(queues.fairKeys).toBe(0);
  });
});
