import type { RateLimitDecision } from '../../lib/policy/policy.types.js';
import { consumeAll, peekState, refundAll, type StateTable } from '../../lib/stores/consume-all.js';
import type { RateLimitStore, RateLimitStoreItem } from '../../lib/stores/rate-limit-store.js';
import type { Clock } from '../../lib/clock.js';

/**
 * The TypeScript reference: the pure algorithm steps over a plain Map that never expires or evicts
 * anything. A store agrees with it when its expiry, eviction and encoding never change a decision.
 */
export class ReferenceStore implements RateLimitStore {
  private readonly states = new Map<string, unknown>();
  private readonly table: StateTable = {
    get: (key) => this.states.get(key),
    set: (key, _algorithm, state) => {
      if (state === undefined) this.states.delete(key);
      else this.states.set(key, state);
    },
  };

  constructor(private readonly clock: Clock) {}

  async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return consumeAll(items.map(this.keyed), this.clock.now(), this.table);
  }

  async peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return items.map(({ policy, key }) => peekState(policy, this.states.get(`${policy.id}:${key}`), this.clock.now()));
  }

  async refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return refundAll(items.map(this.keyed), this.clock.now(), this.table);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    for (const { policy, key } of items) this.states.delete(`${policy.id}:${key}`);
  }

  private readonly keyed = (item: RateLimitStoreItem): RateLimitStoreItem => ({
    ...item,
    key: `${item.policy.id}:${item.key}`,
  });
}
