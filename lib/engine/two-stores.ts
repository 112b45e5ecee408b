import type { StoreOperation } from '../metrics/otel-metrics.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import type { EngineStore, RateLimitStoreCall } from '../stores/engine-store.js';
import { denies, type EngineItem, type Evaluation, merge } from './evaluation.js';
import type { OnFailure } from './store-consume.js';

/** What deciding across two stores needs of the engine. */
export interface TwoStoresSide {
  /** Where rate-limit policies live. */
  readonly store: EngineStore;
  /** Where quotas live (PostgreSQL beside Redis). */
  readonly quotaStore: EngineStore;
  run<T>(store: EngineStore, operation: StoreOperation, call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T>;
  compensate(evaluation: Evaluation): Promise<void>;
}

/**
 * The items of a request when quotas live in a store of their own: the rate limits first, then the quotas only if
 * those allowed, the rate limits refunded if a quota denies. A request denied by one kind consumes nothing of the
 * other. RateLimitService (onFailure 'throw') gets a decision for every item, in their order.
 */
export async function acrossTwoStores(
  side: TwoStoresSide,
  consumeOn: (store: EngineStore, items: readonly EngineItem[], before: Evaluation) => Promise<Evaluation>,
  items: readonly EngineItem[],
  before: Evaluation,
  onFailure: OnFailure,
): Promise<Evaluation> {
  const quotas = items.filter((i) => i.policy.quota !== undefined);
  if (quotas.length === 0) return consumeOn(side.store, items, before);
  const rateItems = items.filter((i) => i.policy.quota === undefined);
  const rates = await consumeOn(side.store, rateItems, before);
  let result: Evaluation;
  if (denies(rates)) {
    if (onFailure === 'fail-modes') return rates;
    // RateLimitService reports every item: how the quotas stand, untouched.
    const peeked = await side.run(side.quotaStore, 'peek', () => side.quotaStore.peek(quotas));
    result = merge(rates, {
      items: quotas,
      decisions: peeked.map((d) => ({ ...d, allowed: true, retryAfterMs: 0 })),
    });
  } else {
    const quota = await consumeOn(side.quotaStore, quotas, merge(before, rates));
    if (denies(quota)) await side.compensate(rates);
    result = merge(rates, quota);
  }
  if (onFailure === 'fail-modes') return result;
  const byItem = new Map(result.items.map((item, i) => [item, result.decisions[i]] as const));
  return { items, decisions: items.map((item) => byItem.get(item) as RateLimitDecision) };
}
