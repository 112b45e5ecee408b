import calculateSlot from 'cluster-key-slot';

import { RedisRateLimitStore, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { consumeFromProcesses } from '../support/processes.js';
import { startCluster, type TestCluster } from '../support/redis-cluster.js';
import { TEST_START_MS } from '../support/time.js';

// Decisions on a 6-node Redis Cluster: every algorithm from several processes, and policies in different slots.
// A master's failover: cluster-failover.spec.ts.

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(() => cluster.stop());

describe.each(ALGORITHMS)('%s on a 6-node Redis Cluster', (algorithm) => {
  it('admits exactly 100 of 200 consumes from 4 processes at once', async () => {
    expect(await consumeFromProcesses(cluster.ports.slice(0, 3).join(','), algorithm, `p-${algorithm}:`)).toBe(100);
  });
});

describe('policies in different slots', () => {
  it('regression: a request denied in one slot leaves the keys of the other slots exactly as they were', async () => {
    // The other slots used to consume and then refund: a fixed window written in a newer window and refunded
    // lost the older window the key held, which a clock behind (another instance, a step back) still counts.
    const keyPrefix = 'denied-elsewhere:';
    const clock = new FakeClock(1_700_000_000_000);
    const store = new RedisRateLimitStore({ client: cluster.client(), clock, keyPrefix });
    const wide = validatePolicy({ name: 'wide', algorithm: 'fixed-window', limit: 2, window: 1000 });
    const narrow = validatePolicy({ name: 'narrow', algorithm: 'fixed-window', limit: 1, window: 1000 });
    expect(calculateSlot(storageKey(keyPrefix, wide, 'k'))).not.toBe(calculateSlot(storageKey(keyPrefix, narrow, 'k')));
    const consume = (...policies: (typeof wide)[]) =>
      store.consume(policies.map((policy) => ({ policy, key: 'k', cost: 1 })));

    expect((await consume(wide))[0]?.allowed).toBe(true); // wide: 1 of 2 in this window
    clock.advance(1000); // the next window
    expect((await consume(narrow))[0]?.allowed).toBe(true); // narrow: exhausted
    const denied = await consume(wide, narrow);
    expect(denied.map((d) => d.allowed)).toEqual([true, false]);
    expect(denied[0]?.remaining).toBe(2); // reported as it stands: nothing consumed
    clock.advance(-500); // a clock behind, back in the first window: wide still holds its 1 there
    const late = nth(await consume(wide), 0);
    expect([late.allowed, late.remaining]).toEqual([true, 0]);
  });

  it('never over-admits a login limited per IP and per account under concurrency', async () => {
    const keyPrefix = 'login:';
    const store = new RedisRateLimitStore({ client: cluster.client(), clock: new FakeClock(TEST_START_MS), keyPrefix });
    const perIp = validatePolicy({ name: 'login-ip', algorithm: 'sliding-window-log', limit: 20, window: '15m' });
    const perAccount = validatePolicy({
      name: 'login-account',
      algorithm: 'sliding-window-log',
      limit: 5,
      window: '15m',
    });
    const accounts = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
    const ipSlot = calculateSlot(storageKey(keyPrefix, perIp, 'ip:192.0.2.1'));
    const accountSlots = accounts.map((a) => calculateSlot(storageKey(keyPrefix, perAccount, a)));
    expect(accountSlots.filter((slot) => slot !== ipSlot)).toHaveLength(accounts.length);
    const attempts = Array.from({ length: 300 }, (_, i) => nth(accounts, i % accounts.length));
    const decisions = await Promise.all(
      attempts.map((account) =>
        store.consume([
          { policy: perIp, key: 'ip:192.0.2.1', cost: 1 },
          { policy: perAccount, key: account, cost: 1 },
        ]),
      ),
    );
    const admitted = attempts.filter((_, i) => nth(decisions, i).every((d) => d.allowed));
    expect(admitted.length).toBeLessThanOrEqual(20);
    for (const account of accounts) expect(admitted.filter((a) => a === account).length).toBeLessThanOrEqual(5);
    // what the store holds agrees: nothing was consumed beyond what was admitted
    const ipNow = nth(await store.peek([{ policy: perIp, key: 'ip:192.0.2.1' }]), 0);
    expect(20 - ipNow.remaining).toBe(admitted.length);
    for (const account of accounts) {
      const now = nth(await store.peek([{ policy: perAccount, key: account }]), 0);
      expect(5 - now.remaining).toBe(admitted.filter((a) => a === account).length);
    }
  });
});
