import { validatePolicy, type RateLimitDecision, type ResolvedPolicy } from '../../lib/index.js';
import { quotaPeriodAt } from '../../lib/algorithms/quota/quota-period.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import { ALGORITHMS, type RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import type { RateLimitStore, RateLimitStoreItem } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { policyOf } from '../support/policies.js';
import { ReferenceStore } from '../support/reference-store.js';
import type { StoreTarget } from '../support/store-targets.js';
import { TEST_START_MS } from '../support/time.js';

const MINUTE = 60_000;
/** The algorithms a charge applies to: all but concurrency, whose slots cannot be charged. */
const CHARGED = ALGORITHMS.filter((algorithm) => algorithm !== 'concurrency');

/**
 * The wait after the scenario below (10 per minute; 4 consumed at TEST_START_MS, 20 s into a minute; 10 charged
 * a second later; a consume of 1 then), worked out by hand from each algorithm's definition.
 */
const DEBT_WAIT_MS: Readonly<Record<Exclude<RateLimitAlgorithm, 'concurrency'>, number>> = {
  // the window's end: the window is spent, however far past its limit
  'fixed-window': MINUTE - 21_000,
  // 14 − 1/6 taken of 10 (one unit drains in 6 s): 1 fits once 5 − 1/6 more have drained, 29 s
  'token-bucket': 29_000,
  // TAT 83 s ahead; one fits at most 54 s (9 × 6 s) ahead
  gcra: 29_000,
  // 14 in this window: in the next, 14 × (1 − e / 1m) + 1 <= 10 from e = 1m − floor(9 × 1m / 14)
  'sliding-window-counter': MINUTE - 21_000 + MINUTE - Math.floor((9 * MINUTE) / 14),
  // the entry of 10 frees enough when it leaves the window, a minute after it was logged
  'sliding-window-log': MINUTE,
  // the period's end
  quota: quotaPeriodAt('day', 'UTC', TEST_START_MS).endMs - (TEST_START_MS + 1000),
};

function chargeOf(store: RateLimitStore): (items: readonly RateLimitStoreItem[]) => Promise<RateLimitDecision[]> {
  const charge = store.charge;
  if (charge === undefined) throw new Error(`the ${store.constructor.name} under test has no charge()`);
  return (items) => charge.call(store, items);
}

/** One store and the reference on one clock: every call made on both, the store's reply expected equal. */
function pair(target: StoreTarget) {
  const clock = new FakeClock(TEST_START_MS);
  const reference = new ReferenceStore(clock);
  const store = target.make(clock);
  const both = async (op: 'consume' | 'charge' | 'peek', items: RateLimitStoreItem[]): Promise<RateLimitDecision[]> => {
    const run = (s: RateLimitStore) => (op === 'charge' ? chargeOf(s)(items) : s[op](items));
    const expected = await run(reference);
    expect(await run(store)).toEqual(expected);
    return expected;
  };
  return { clock, reference, store, both };
}

/**
 * Charges (RateLimitStore.charge) on one store: units taken without deciding, past the limit, a debt the next
 * consumes wait out exactly — as the TypeScript reference decides, so equal on every store.
 */
export function chargeSuite(target: StoreTarget): void {
  describe(`charges on the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it.each(CHARGED)(
      '%s: after a charge past the limit, a consume waits exactly until the debt is paid, nothing remaining, and the key keeps an expiry',
      async (algorithm) => {
        const { clock, both } = pair(target);
        const policy = validatePolicy(policyOf(algorithm, { name: `debt-${algorithm}`, limit: 10, window: '1m' }));
        const one = async (op: 'consume' | 'charge', cost: number) =>
          nth(await both(op, [{ policy, key: 'k', cost }]), 0);
        expect((await one('consume', 4)).allowed).toBe(true);
        clock.advance(1000);
        const charged = await one('charge', 10);
        expect(charged).toMatchObject({ allowed: false, remaining: 0 });
        if (target.expiries !== undefined) {
          // PostgreSQL keeps a quota's usage in its durable table, per period, without an expiry (billing data)
          const durable = algorithm === 'quota' && target.name === 'postgres';
          const left = await target.expiries(clock.now(), policy.id);
          expect(left).toHaveLength(durable ? 0 : 1);
          for (const ms of left) expect(ms).toBeGreaterThanOrEqual(charged.resetMs);
        }
        const waitMs = DEBT_WAIT_MS[algorithm as keyof typeof DEBT_WAIT_MS];
        expect(await one('consume', 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: waitMs });
        clock.advance(waitMs - 1);
        expect(await one('consume', 1)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1 });
        clock.advance(1);
        expect((await one('consume', 1)).allowed).toBe(true);
      },
    );

    it.each(CHARGED)(
      '%s: a charge from a clock behind counts in the key as the one ahead left it',
      async (algorithm) => {
        const { clock, both } = pair(target);
        const policy = validatePolicy(policyOf(algorithm, { name: `behind-${algorithm}`, limit: 5, window: 2000 }));
        const items = (cost: number) => [{ policy, key: 'k', cost }];
        await both('consume', items(3));
        clock.advance(2500);
        await both('consume', items(2));
        clock.advance(-2000);
        await both('charge', items(6));
        await both('consume', items(1));
        clock.advance(1999);
        await both('peek', items(1));
        await both('consume', items(1));
      },
    );

    it.each(CHARGED)(
      '%s: a blocked key stays blocked and is charged all the same; a shadow item is not charged',
      async (algorithm) => {
        const { clock, reference, store, both } = pair(target);
        const policy = validatePolicy(policyOf(algorithm, { name: `blocked-${algorithm}`, limit: 5, window: '1h' }));
        const shadow = validatePolicy(policyOf(algorithm, { name: `shadow-${algorithm}`, limit: 5, window: '1h' }));
        await Promise.all([store.block?.([{ policy, key: 'k' }], 3000), reference.block([{ policy, key: 'k' }], 3000)]);
        const [blocked, shadowed] = await both('charge', [
          { policy, key: 'k', cost: 7 },
          { policy: shadow, key: 'k', cost: 7, shadow: true },
        ]);
        expect(blocked).toMatchObject({ allowed: false, blocked: true, retryAfterMs: 3000 });
        expect(shadowed).toMatchObject({ allowed: true, remaining: 5 });
        clock.advance(3000);
        // the block has ended: the 7 charged under it count
        const [after] = await both('consume', [{ policy, key: 'k', cost: 1 }]);
        expect(after).toMatchObject({ allowed: false, remaining: 0 });
      },
    );

    it.each(['token-bucket', 'gcra'] as const)(
      '%s: a charge past the debt cap is clamped there, one capacity owed, and the wait stays within maxWaitMs',
      async (algorithm) => {
        const { clock, both } = pair(target);
        const policy = validatePolicy(policyOf(algorithm, { name: `cap-${algorithm}`, limit: 10, window: '1m' }));
        const one = async (op: 'consume' | 'charge', cost: number) =>
          nth(await both(op, [{ policy, key: 'k', cost }]), 0);
        await one('charge', 7);
        // a settle function that counted bytes: the key owes one capacity (10 tokens, 60 s), no more
        await one('charge', Number.MAX_SAFE_INTEGER);
        clock.advance(1000);
        await one('charge', 5);
        const denied = await one('consume', 1);
        // the charge a second later is clamped too: 20 tokens taken, 1 fits once 11 have drained (66 s)
        expect(denied).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 66_000 });
        expect(denied.retryAfterMs).toBeLessThanOrEqual(maxWaitMs(policy));
        clock.advance(66_000);
        expect((await one('consume', 1)).allowed).toBe(true);
      },
    );

    it('refuses to charge a concurrency limit, changing nothing', async () => {
      const { store, both } = pair(target);
      const slots: ResolvedPolicy = validatePolicy({ name: 'slots', algorithm: 'concurrency', limit: 2, window: '5m' });
      const window = validatePolicy({ name: 'beside', algorithm: 'fixed-window', limit: 2, window: '1m' });
      await both('consume', [{ policy: slots, key: 'k', cost: 1 }]);
      await expect(
        chargeOf(store)([
          { policy: window, key: 'k', cost: 5 },
          { policy: slots, key: 'k', cost: 1 },
        ]),
      ).rejects.toThrow(/policy "slots" is a concurrency limit, which cannot be charged/);
      const [left, besides] = await both('peek', [
        { policy: slots, key: 'k', cost: 0 },
        { policy: window, key: 'k', cost: 0 },
      ]);
      expect([left?.remaining, besides?.remaining]).toEqual([1, 2]);
    });
  });
}
