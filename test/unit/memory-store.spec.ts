import { jest } from '@jest/globals';

import { MemoryRateLimitStore, validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { TEST_START_MS } from '../support/time.js';

const policy = validatePolicy({ name: 'p', algorithm: 'sliding-window-counter', limit: 10, window: '1m' });
const busy = validatePolicy({ name: 'busy', algorithm: 'fixed-window', limit: 1_000_000, window: '1m' });
const longer = validatePolicy({ name: 'q', algorithm: 'token-bucket', limit: 10, window: '1h' });

describe('MemoryRateLimitStore', () => {
  it('holds 1,000,000 distinct keys within its bound, evicting the least recently written', async () => {
    const store = new MemoryRateLimitStore({ clock: new FakeClock(TEST_START_MS), maxKeys: 10_000 });
    for (let i = 0; i < 1_000_000; i++) await store.consume([{ policy, key: `k${i}`, cost: 1 }]);
    expect(store.size).toBe(10_000);
    // the newest keys are still counted, the oldest were evicted
    expect((await store.peek([{ policy, key: 'k999999' }]))[0]?.remaining).toBe(9);
    expect((await store.peek([{ policy, key: 'k0' }]))[0]?.remaining).toBe(10);
  });

  it('reclaims expired keys as it works, with no timer, and its size returns to zero', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new MemoryRateLimitStore({ clock });
    const timers = jest.spyOn(global, 'setTimeout');
    for (let i = 0; i < 1000; i++)
      await store.consume([
        { policy, key: `k${i}`, cost: 1 },
        { policy: longer, key: `k${i}`, cost: 1 },
      ]);
    expect(store.size).toBe(2000);
    expect(timers).not.toHaveBeenCalled();
    clock.advance(2 * 60_000); // the 1-minute policy's keys are gone (two windows for the sliding counter)
    // each write examines a few entries: a thousand writes pass over all 2000 of them, twice
    for (let i = 0; i < 1000; i++) await store.consume([{ policy: busy, key: 'live', cost: 1 }]);
    expect(store.size).toBe(1001);
    clock.advance(3_600_000);
    for (let i = 0; i < 600; i++) await store.consume([{ policy: busy, key: 'live', cost: 1 }]);
    await store.refund([{ policy: busy, key: 'live', cost: 1000 }]);
    expect(store.size).toBe(0);
    timers.mockRestore();
  });

  it('prune() removes every expired key at once', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new MemoryRateLimitStore({ clock });
    for (let i = 0; i < 100; i++) await store.consume([{ policy, key: `k${i}`, cost: 1 }]);
    clock.advance(2 * 60_000);
    expect(store.prune()).toBe(100);
    expect(store.size).toBe(0);
  });

  it('answers a refund with the key as it then stands: its units back, and still blocked while a block lasts', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new MemoryRateLimitStore({ clock });
    await store.consume([{ policy, key: 'plain', cost: 4 }]);
    expect(await store.refund([{ policy, key: 'plain', cost: 3 }])).toMatchObject([{ allowed: true, remaining: 9 }]);
    await store.consume([{ policy, key: 'held', cost: 4 }]);
    await store.block([{ policy, key: 'held' }], 30_000);
    clock.advance(10_000);
    expect(await store.refund([{ policy, key: 'held', cost: 3 }])).toMatchObject([
      { allowed: false, blocked: true, remaining: 0, retryAfterMs: 20_000 },
    ]);
    clock.advance(20_000);
    // the block is over; the units given back under it stay given back
    expect(await store.peek([{ policy, key: 'held' }])).toMatchObject([{ allowed: true, remaining: 9 }]);
  });

  it('rejects a bad bound or prefix with a clear error', () => {
    expect(() => new MemoryRateLimitStore({ maxKeys: 0 })).toThrow(/maxKeys must be an integer >= 1, got 0/);
    expect(() => new MemoryRateLimitStore({ keyPrefix: 'a{b' })).toThrow(/keyPrefix must be .* without braces/);
  });
});
