import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import type { StoreOperation } from '../../metrics/otel-metrics.js';
import type { EngineStore, RateLimitStoreCall } from '../../stores/engine-store.js';
import type { EngineItem, Evaluation } from '../evaluation.js';

/** What a dry run's peek needs of the engine. */
export interface ShadowSide {
  storeOf(policy: ResolvedPolicy): EngineStore;
  run<T>(store: EngineStore, operation: StoreOperation, call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T>;
}

/** Whether an item's identity has an override in dry run. */
export const inDryRun = (item: EngineItem): boolean => item.override?.shadow === true;

/**
 * Decides `items` (decide) after asking, for those whose override is a dry run, what the override would have
 * answered: a peek under the override's limit, before the decision, so that it reads the state as the request
 * found it (one store call more for the requests of those identities only; a request of the same key in between
 * may move it: it is a dry run). The answer lands in each item's `override.allowed`; when the peek fails it stays
 * unknown, and the decision is made all the same (a dry run never fails a request).
 */
export async function withDryRuns(
  side: ShadowSide,
  items: readonly EngineItem[],
  decide: () => Promise<Evaluation>,
): Promise<Evaluation> {
  await peekDryRuns(side, items.filter(inDryRun));
  return decide();
}

/** One peek per store of the dry runs; resolves once each answered or failed, never rejects. */
function peekDryRuns(side: ShadowSide, items: readonly EngineItem[]): Promise<unknown> {
  const byStore = new Map<EngineStore, EngineItem[]>();
  for (const item of items) {
    const store = side.storeOf(item.policy);
    byStore.set(store, [...(byStore.get(store) ?? []), item]);
  }
  return Promise.all(
    [...byStore].map(([store, part]) =>
      side
        .run(store, 'peek', () =>
          store.peek(part.map((item) => ({ policy: (item.override ?? item).policy, key: item.key }))),
        )
        .then(
          (decisions: readonly RateLimitDecision[]) => part.forEach((item, i) => answer(item, decisions[i])),
          () => undefined,
        ),
    ),
  );
}

/** A dry run's answer from its peek: allowed when nothing blocks the key and its cost fits what remains. */
function answer(item: EngineItem, peek: RateLimitDecision | undefined): void {
  if (item.override === undefined || peek === undefined) return;
  item.override.allowed = peek.blocked !== true && peek.remaining >= item.cost;
}
