import { type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS, type RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { policyOf, windowEnds } from '../support/policies.js';
import type { StoreTarget } from '../support/store-targets.js';
import { TEST_START_MS } from '../support/time.js';

const penalty = (name: string, algorithm: RateLimitAlgorithm, limit: number): RateLimitPolicy =>
  policyOf(algorithm, { name, limit, window: '1s', block: '10s' });

/**
 * Blocks on one store: a policy's `block` starts at its denial, in the same call, is not extended by the
 * requests it denies, counts down in retryAfterMs and peek, and ends; block()/unblock() ban by hand.
 */
export function blockSuite(target: StoreTarget): void {
  describe(`blocks on the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it.each(ALGORITHMS)('%s: a denial blocks the key for the block, not extended, then lifted', async (algorithm) => {
      const clock = new FakeClock(TEST_START_MS);
      const store: RateLimitStore = target.make(clock);
      const policy = validatePolicy(penalty(`penalty-${algorithm}`, algorithm, 2));
      const other = validatePolicy({ name: `other-${algorithm}`, algorithm: 'fixed-window', limit: 100, window: '1h' });
      const request = () =>
        store.consume([
          { policy, key: 'ip:1', cost: 1 },
          { policy: other, key: 'ip:1', cost: 1 },
        ]);
      const state = async () =>
        nth(
          await store.peek([
            { policy, key: 'ip:1' },
            { policy: other, key: 'ip:1' },
          ]),
          0,
        );
      const remainingOfOther = async () => nth(await store.peek([{ policy: other, key: 'ip:1' }]), 0).remaining;

      expect((await request()).map((d) => d.allowed)).toEqual([true, true]);
      expect((await request()).map((d) => d.allowed)).toEqual([true, true]);
      const [denial, beside] = await request();
      // The wait is the block's, or longer: a quota's spent units come back only when its day ends.
      const dayLeftMs = 86_400_000 - (clock.now() % 86_400_000);
      const waitMs = windowEnds(algorithm) ? 10_000 : Math.max(10_000, dayLeftMs);
      expect(denial).toMatchObject({ allowed: false, blocked: true, retryAfterMs: waitMs });
      expect(beside?.allowed).toBe(true); // would have passed, but nothing of the request was consumed
      expect(await remainingOfOther()).toBe(98);

      clock.advance(5_000); // the window has long passed: only the block denies
      const [during] = await request();
      expect(during).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 5_000, remaining: 0 });
      expect(await state()).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 5_000 });
      expect(await remainingOfOther()).toBe(98);

      clock.advance(5_000);
      // A quota's 2 units stay spent until its day ends, block or not (a request now is denied and blocks
      // again): the day is let pass, so that what is tested is that the block is lifted, not the quota.
      if (!windowEnds(algorithm)) clock.advance(dayLeftMs - 10_000);
      expect((await request()).map((d) => d.allowed)).toEqual([true, true]);
      expect((await state()).blocked).toBeUndefined();
    });

    it.each(ALGORITHMS)('%s: block() and unblock() by hand, the state kept', async (algorithm) => {
      const clock = new FakeClock(TEST_START_MS);
      const store = target.make(clock);
      const policy = validatePolicy(policyOf(algorithm, { name: `manual-${algorithm}`, limit: 5, window: '1h' }));
      const item = { policy, key: 'user:9' };
      await store.consume([{ ...item, cost: 2 }]);
      await store.block?.([item], 3_000);
      expect((await store.consume([{ ...item, cost: 1 }]))[0]).toMatchObject({
        allowed: false,
        blocked: true,
        retryAfterMs: 3_000,
      });
      clock.advance(1_000);
      expect((await store.peek([item]))[0]).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 2_000 });
      await store.unblock?.([item]);
      const after = nth(await store.consume([{ ...item, cost: 1 }]), 0);
      expect(after.allowed).toBe(true);
      // What was consumed before the block still counts.
      expect(after.remaining).toBeLessThanOrEqual(2);
      await store.block?.([item], 3_000);
      clock.advance(3_000);
      expect((await store.consume([{ ...item, cost: 1 }]))[0]?.allowed).toBe(true);
    });

    it('a shadow policy that would deny starts no block', async () => {
      const clock = new FakeClock(TEST_START_MS);
      const store = target.make(clock);
      const policy = validatePolicy(penalty('shadow-penalty', 'sliding-window-log', 1));
      const shadow = { policy, key: 'ip:2', cost: 1, shadow: true };
      expect((await store.consume([shadow]))[0]?.allowed).toBe(true);
      const denied = nth(await store.consume([shadow]), 0);
      expect(denied.allowed).toBe(false);
      expect(denied.blocked).toBeUndefined();
      clock.advance(1_000);
      expect((await store.consume([shadow]))[0]?.allowed).toBe(true);
    });
  });
}
