import { jest } from '@jest/globals';

import { MemoryRateLimitStore, RateLimitPolicyError, validatePolicy } from '../../lib/index.js';
import { DecisionEngine } from '../../lib/engine/decision-engine.js';
import { ServiceCalls } from '../../lib/service/service-calls.js';
import type { ResolvedPolicy } from '../../lib/policy/policy.types.js';
import type { RateLimitStore, RateLimitStoreItem } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { TEST_START_MS } from '../support/time.js';

// RateLimitService's path of a charge (ServiceCalls.charge, which its settle takes as refund() takes change()):
// the store's charge() under its breaker, or a clear refusal before the store is asked.

const quiet = { log() {}, warn() {}, error() {} };

/** A store of a user's that implements everything but charge(): the memory store's other operations. */
class NoChargeStore implements RateLimitStore {
  constructor(private readonly inner: MemoryRateLimitStore) {}
  consume = (items: readonly RateLimitStoreItem[]) => this.inner.consume(items);
  peek = (items: readonly Omit<RateLimitStoreItem, 'cost'>[]) => this.inner.peek(items);
  refund = (items: readonly RateLimitStoreItem[]) => this.inner.refund(items);
  reset = (items: readonly Omit<RateLimitStoreItem, 'cost'>[]) => this.inner.reset(items);
}

function calls(store: RateLimitStore, clock: FakeClock) {
  const engine = new DecisionEngine({
    stores: { rates: store, quotas: store, owned: [] },
    clock,
    timeoutMs: 5000,
    logger: quiet,
  });
  return new ServiceCalls(engine);
}

describe('ServiceCalls.charge', () => {
  const tokens: ResolvedPolicy = validatePolicy({ name: 'tokens', algorithm: 'token-bucket', limit: 10, window: '1s' });

  it("charges through the policy's store: past the limit, a debt the next consume waits out", async () => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new MemoryRateLimitStore({ clock });
    const [charged] = await calls(store, clock).charge([{ policy: tokens, key: 'k', cost: 13 }], tokens);
    expect(charged).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 400 });
    const [next] = await store.consume([{ policy: tokens, key: 'k', cost: 1 }]);
    expect(next).toMatchObject({ allowed: false, retryAfterMs: 400 });
  });

  it('refuses a store without charge(), naming it, and never skips the charge silently', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const inner = new MemoryRateLimitStore({ clock });
    const service = calls(new NoChargeStore(inner), clock);
    const charging = service.charge([{ policy: tokens, key: 'k', cost: 13 }], tokens);
    await expect(charging).rejects.toThrow(RateLimitPolicyError);
    await expect(charging).rejects.toThrow(
      /rate-limit policy "tokens".*the store \(NoChargeStore\) cannot charge an overrun: it has no charge\(\)/,
    );
    // not a store failure: the store answers as before (the breaker counted nothing), nothing was charged
    expect((await service.call(['tokens'], (s) => s.peek([{ policy: tokens, key: 'k' }]), tokens))[0]).toMatchObject({
      allowed: true,
      remaining: 10,
    });
  });

  it('refuses a concurrency policy before the store is asked', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const store = new MemoryRateLimitStore({ clock });
    const slots = validatePolicy({ name: 'slots', algorithm: 'concurrency', limit: 2, window: '5m' });
    const charge = jest.spyOn(store, 'charge');
    await expect(
      calls(store, clock).charge(
        [
          { policy: tokens, key: 'k', cost: 3 },
          { policy: slots, key: 'k', cost: 1 },
        ],
        tokens,
      ),
    ).rejects.toThrow(/rate-limit policy "slots".*a concurrency limit cannot be charged/);
    expect(charge).not.toHaveBeenCalled();
  });
});
