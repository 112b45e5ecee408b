import type { RateLimitDecision } from '../policy/policy.types.js';
import { checkChargeable } from './consume-all.js';
import type { StoreCallItem } from './engine-store.js';
import type { RateLimitStoreItem } from './rate-limit-store.js';

/**
 * What the Redis and PostgreSQL stores share: peek, refund and charge are each one decision of an operation
 * on the request's items, which each store makes its own way (decide).
 */
export abstract class DecidingStore {
  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return this.decide('peek', items);
  }

  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.decide('refund', items);
  }

  /** Takes each item's cost without deciding, past the limit (a concurrency limit is refused first). */
  async charge(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    checkChargeable(items);
    return this.decide('charge', items);
  }

  /** The decisions of `op` on `items`, one per item, in their order. */
  protected abstract decide(
    op: 'peek' | 'refund' | 'charge',
    items: readonly StoreCallItem[],
  ): Promise<RateLimitDecision[]>;
}
