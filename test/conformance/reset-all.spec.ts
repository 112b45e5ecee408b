import { type ResolvedPolicy, validatePolicy } from '../../lib/index.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  clusterTarget,
  memoryTarget,
  postgresTarget,
  redisTarget,
  type StoreTarget,
} from '../support/store-targets.js';

// RateLimitService.resetAll (issue 19, testing support) rests on each store's resetAll(): every policy and key
// under the store's prefix goes, blocks included, and another prefix on the same server keeps all it has.

const POLICIES: ResolvedPolicy[] = [
  validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit: 3, window: '1m' }),
  validatePolicy({ name: 'tb', algorithm: 'token-bucket', limit: 3, window: '1m' }),
  validatePolicy({ name: 'log', algorithm: 'sliding-window-log', limit: 3, window: '1m' }),
  validatePolicy({ name: 'month', algorithm: 'quota', limit: 3, period: 'month', timeZone: 'UTC' }),
];
const KEYS = ['user:1', 'user:2', 'a key with spaces {and braces}'];

async function useUp(store: RateLimitStore): Promise<void> {
  for (const policy of POLICIES) {
    for (const key of KEYS) await store.consume([{ policy, key, cost: 3 }]);
  }
  await store.block?.([{ policy: POLICIES[0] as ResolvedPolicy, key: 'banned' }], 60_000);
}

async function remaining(store: RateLimitStore): Promise<number[]> {
  const items = POLICIES.flatMap((policy) => KEYS.map((key) => ({ policy, key })));
  const banned = { policy: POLICIES[0] as ResolvedPolicy, key: 'banned' };
  return (await store.peek([...items, banned])).map((d) => (d.allowed ? d.remaining : 0));
}

describe.each<StoreTarget>([memoryTarget, redisTarget(), clusterTarget(), postgresTarget()])(
  'resetAll on the $name store',
  (target) => {
    beforeAll(() => target.setup(), 60_000);
    afterAll(() => target.teardown());

    it('removes every key under its prefix, blocks included, and nothing under another', async () => {
      const clock = new FakeClock(1_700_000_000_000);
      const mine = target.make(clock);
      const other = target.make(clock);
      await useUp(mine);
      await useUp(other);
      expect(await remaining(mine)).toEqual(Array(13).fill(0));
      const removed = await (mine.resetAll as () => Promise<number>).call(mine);
      // one key (or row) per policy and identity, at least, and the block's
      expect(removed).toBeGreaterThanOrEqual(POLICIES.length * KEYS.length);
      expect(await remaining(mine)).toEqual(Array(13).fill(3));
      expect(await (mine.resetAll as () => Promise<number>).call(mine)).toBe(0);
      expect(await remaining(other)).toEqual(Array(13).fill(0));
      await mine.close?.();
      await other.close?.();
    });
  },
);
