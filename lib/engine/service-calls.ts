import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import type { RateLimitStore, RateLimitStoreItem } from '../stores/rate-limit-store.js';
import { elementAt } from '../util/element-at.js';
import type { DecisionEngine } from './decision-engine.js';
import { withConcurrencyWaits } from './slot-wait.js';

/**
 * RateLimitService's store operations outside decisions (peek, usage, reset, block, refund, resetAll) on the
 * engine's stores: under a store's breaker and timeout, failures reported and thrown (the caller decides), and
 * changes of stored state announced to every instance's cache of denials.
 */
export class ServiceCalls {
  constructor(private readonly engine: DecisionEngine) {}

  /**
   * Runs one store operation of RateLimitService, reporting failures: on the store of `policy` under its
   * breaker and timeout, or, without a policy, as given.
   */
  async call<T>(
    policies: readonly string[],
    operation: (store: RateLimitStore) => Promise<T>,
    policy?: ResolvedPolicy,
  ): Promise<T> {
    try {
      if (policy === undefined) return await operation(this.engine.store);
      const store = this.engine.storeOf(policy);
      return await this.engine.breakerFor(store).run(() => operation(store));
    } catch (error) {
      this.engine.reporter.report(error, policies);
      throw error;
    }
  }

  /**
   * How `item` stands under its policy, consuming nothing (RateLimitService.peek), as call() runs it: a
   * concurrency denial's wait cut as the engine cuts a consume's (slot-wait.ts).
   */
  async peek(item: { policy: ResolvedPolicy; key: string }): Promise<RateLimitDecision[]> {
    const decisions = await this.call([item.policy.name], (store) => store.peek([item]), item.policy);
    return withConcurrencyWaits([item], decisions);
  }

  /**
   * Runs a RateLimitService operation that changes the stored state of `items` outside a decision (reset,
   * unblock, block, refund), as call() does; then their cached denials are forgotten here, and the change is
   * announced to the other instances before this resolves, whether the operation succeeded or not.
   */
  async change<T>(
    items: readonly { policy: ResolvedPolicy; key: string }[],
    operation: (store: RateLimitStore) => Promise<T>,
    policy: ResolvedPolicy,
  ): Promise<T> {
    try {
      return await this.call([policy.name], operation, policy);
    } finally {
      if (this.engine.storeOf(policy) === this.engine.store) await this.engine.feed.changed(items);
    }
  }

  /**
   * Runs `operation` on the items of each store (as change() does for one), all stores at once; resolves with
   * the replies in the items' order. The quotas' store is another beside Redis with the `postgres` option.
   */
  async changeEach<T>(
    items: readonly RateLimitStoreItem[],
    operation: (store: RateLimitStore, items: readonly RateLimitStoreItem[]) => Promise<readonly T[]>,
  ): Promise<T[]> {
    const byStore = new Map<RateLimitStore, number[]>();
    items.forEach((item, i) => {
      const store = this.engine.storeOf(item.policy);
      const indexes = byStore.get(store);
      if (indexes === undefined) byStore.set(store, [i]);
      else indexes.push(i);
    });
    const replies: T[] = new Array<T>(items.length);
    await Promise.all(
      [...byStore.values()].map(async (indexes) => {
        const part = indexes.map((i) => elementAt(items, i, 'the items of a change'));
        const first = elementAt(part, 0, 'the items of a change');
        const answer = await this.change(part, (store) => operation(store, part), first.policy);
        indexes.forEach((at, i) => (replies[at] = elementAt(answer, i, "the store's reply")));
      }),
    );
    return replies;
  }

  /**
   * Removes all state of the module from each store it uses (RateLimitService.resetAll), then makes every
   * instance's cache of denials forget; resolves with the number of keys or rows removed.
   */
  async resetAll(): Promise<number> {
    let removed = 0;
    try {
      for (const store of new Set([this.engine.store, this.engine.quotaStore])) {
        if (store.resetAll === undefined) {
          throw new TypeError(
            `nest-rate-limit: the store (${store.constructor.name}) cannot remove all its state: it has no resetAll()`,
          );
        }
        removed += await this.call([], () => (store.resetAll as () => Promise<number>).call(store));
      }
    } finally {
      await this.engine.feed.everything();
    }
    return removed;
  }
}
