import { validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { policyOf } from '../support/policies.js';
import type { StoreTarget } from '../support/store-targets.js';
import { TEST_START_MS } from '../support/time.js';

/**
 * Shadow items in a consume, on one store: a shadow item never denies the others, consumes nothing when it
 * would deny, and is consumed with the others when it allows; a denied request consumes nothing of either.
 */
export function shadowSuite(target: StoreTarget): void {
  describe(`shadow items on the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it.each(ALGORITHMS)('%s: decided with the others, never denying them', async (algorithm) => {
      const clock = new FakeClock(TEST_START_MS);
      const store: RateLimitStore = target.make(clock);
      // Different names: different keys, and on a Cluster most likely different slots.
      const enforced = validatePolicy(policyOf(algorithm, { name: `enforced-${algorithm}`, limit: 5, window: '1h' }));
      const shadow = validatePolicy(policyOf(algorithm, { name: `shadow-${algorithm}`, limit: 2, window: '1h' }));
      const key = 'user:7';
      const request = (enforcedCost: number, shadowCost: number) =>
        store.consume([
          { policy: enforced, key, cost: enforcedCost },
          { policy: shadow, key, cost: shadowCost, shadow: true },
        ]);
      const remaining = async () =>
        (
          await store.peek([
            { policy: enforced, key },
            { policy: shadow, key },
          ])
        ).map((d) => d.remaining);

      // Both allow: both consumed.
      expect((await request(1, 1)).map((d) => d.allowed)).toEqual([true, true]);
      expect(await remaining()).toEqual([4, 1]);
      // The shadow item would deny: the enforced one is consumed as if it were absent, the shadow one not.
      expect((await request(1, 2)).map((d) => d.allowed)).toEqual([true, false]);
      expect(await remaining()).toEqual([3, 1]);
      // The enforced item denies: nothing is consumed, the shadow item reports the key as it stands.
      const denied = await request(4, 1);
      expect(denied.map((d) => d.allowed)).toEqual([false, true]);
      expect(await remaining()).toEqual([3, 1]);
      // Shadow alone, as the only item of a call.
      expect((await store.consume([{ policy: shadow, key, cost: 2, shadow: true }]))[0]?.allowed).toBe(false);
      expect((await store.consume([{ policy: shadow, key, cost: 1, shadow: true }]))[0]?.allowed).toBe(true);
      expect(await remaining()).toEqual([3, 0]);
    });
  });
}
