import type { DecisionEngine } from '../engine/decision-engine.js';
import { withConcurrencyWaits } from '../engine/slot-wait.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import type { EngineStore } from '../stores/engine-store.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';
import { elementAt } from '../util/element-at.js';

/**
 * RateLimitService's store operations outside decisions (peek, usage, reset, block, refund, charge, resetAll) on the
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
    operation: (store: EngineStore) => Promise<T>,
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
    operation: (store: EngineStore) => Promise<T>,
    policy: ResolvedPolicy,
  ): Promise<T> {
    try {
      return await this.call([policy.name], operation, policy);
    } finally {
      if (this.engine.storeOf(policy) === this.engine.store) await this.engine.feed.changed(items);
    }
  }

  /**
   * Runs `run` on the items of each store (`part`, with the policy of its first item, whose store it is), all
   * stores at once; resolves with the replies in the items' order. The quotas' store is another beside Redis
   * with the `postgres` option.
   * @example await calls.eachStore(items, (part, policy) => calls.change(part, (s) => s.refund(part), policy));
   */
  async eachStore<T>(
    items: readonly RateLimitStoreItem[],
    run: (part: readonly RateLimitStoreItem[], policy: ResolvedPolicy) => Promise<readonly T[]>,
  ): Promise<T[]> {
    const byStore = new Map<EngineStore, number[]>();
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
        const answer = await run(part, first.policy);
        indexes.forEach((at, i) => (replies[at] = elementAt(answer, i, "the store's reply")));
      }),
    );
    return replies;
  }

  /**
   * Takes the items' cost without deciding (RateLimitStore.charge: counted even past the limit, a debt later
   * requests wait out), as change() runs a refund: under `policy`'s store's breaker and timeout, the change
   * announced. A store without charge(), or a concurrency policy, is refused before the store is asked (not a
   * store failure: the breaker does not count it), with an error that says which.
   * @example await calls.charge([{ policy, key, cost: overrun }], policy);
   */
  async charge(items: readonly RateLimitStoreItem[], policy: ResolvedPolicy): Promise<RateLimitDecision[]> {
    const store = this.engine.storeOf(policy);
    const where = { policy: policy.name, where: 'RateLimitService' };
    if (store.charge === undefined) {
      throw new RateLimitPolicyError(
        `the store (${store.constructor.name}) cannot charge an overrun: it has no charge(), so a cost known ` +
          'after the request (reserve, then settle) cannot be counted past the estimate; use a store of the ' +
          'module (memory, Redis, PostgreSQL) or implement charge()',
        where,
      );
    }
    const slots = items.find((item) => item.policy.algorithm === 'concurrency');
    if (slots !== undefined) {
      throw new RateLimitPolicyError(
        'a concurrency limit cannot be charged: its units are requests in flight, taken when one is admitted and ' +
          'given back when it ends, not a cost known afterwards; charge a rate limit or a quota instead',
        { ...where, policy: slots.policy.name },
      );
    }
    const charge = store.charge.bind(store);
    return this.change(items, () => charge(items), policy);
  }

  /**
   * Blocks the items' keys for `durationMs` (RateLimitService.block), as change() runs a refund; a store without
   * block() is refused before it is asked (not a store failure: the breaker does not count it, onError is not
   * told), with an error naming it.
   */
  async block(
    items: readonly { policy: ResolvedPolicy; key: string }[],
    durationMs: number,
    policy: ResolvedPolicy,
  ): Promise<void> {
    const block = this.blocking(policy).block;
    await this.change(items, () => block(items, durationMs), policy);
  }

  /** Lifts the items' blocks (RateLimitService.unblock), as block() sets them. */
  async unblock(items: readonly { policy: ResolvedPolicy; key: string }[], policy: ResolvedPolicy): Promise<void> {
    const unblock = this.blocking(policy).unblock;
    await this.change(items, () => unblock(items), policy);
  }

  /** The block and unblock of `policy`'s store, or an error naming the store that has none (a custom store). */
  private blocking(policy: ResolvedPolicy): Required<Pick<EngineStore, 'block' | 'unblock'>> {
    const store = this.engine.storeOf(policy);
    if (store.block === undefined || store.unblock === undefined) {
      throw new RateLimitPolicyError(
        `the store (${store.constructor.name}) cannot block keys: it has no block()/unblock()`,
        { policy: policy.name, where: 'RateLimitService' },
      );
    }
    return { block: store.block.bind(store), unblock: store.unblock.bind(store) };
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
