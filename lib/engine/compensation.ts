import { elementAt } from '../util/element-at.js';
import type { StoreOperation } from '../metrics/otel-metrics.js';
import type { RateLimitDecisionSource, ResolvedPolicy } from '../policy/policy.types.js';
import type { RateLimitStore, RateLimitStoreCall } from '../stores/rate-limit-store.js';
import type { ChangeFeed } from './coherence/invalidation-feed.js';
import { denies, type EngineItem, type Evaluation, sourceAt } from './evaluation.js';
import type { FailureReporter } from './failure-reporter.js';
import type { LeaseBook } from './leases/lease-book.js';

/** What giving units back needs of the engine (DecisionEngine is one). */
export interface RefundSide {
  /** The store of rate limits, whose changes the feed announces to the other instances' deny caches. */
  readonly store: RateLimitStore;
  readonly feed: Pick<ChangeFeed, 'changed'>;
  readonly reporter: FailureReporter;
  /** Where units spent from this instance's leases go back (they never reached the store). */
  readonly leases: LeaseBook | undefined;
  storeOf(policy: ResolvedPolicy, source?: RateLimitDecisionSource): RateLimitStore;
  run<T>(
    store: RateLimitStore,
    operation: StoreOperation,
    call: (timing: RateLimitStoreCall) => Promise<T>,
  ): Promise<T>;
  released(items: readonly EngineItem[]): void;
}

/**
 * Gives back what an evaluation consumed (a later step of its request denied), and reports the keys as
 * they then stand. Between the calls a concurrent request may find those units taken: that can
 * under-admit, never over-admit. If the refund fails, the units stay taken until they expire.
 */
export async function compensate(side: RefundSide, evaluation: Evaluation): Promise<void> {
  if (evaluation.items.length === 0 || denies(evaluation)) return;
  evaluation.compensated = true;
  // What the evaluation consumed: every item but the shadow ones that would have denied, on the store that
  // decided it (the local one for a 'local' decision); what it spent of this instance's leases goes back to them.
  const consumed: { item: EngineItem; store: RateLimitStore }[] = [];
  evaluation.items.forEach((item, i) => {
    if (!elementAt(evaluation.decisions, i, 'the decisions of an evaluation').allowed) return;
    const source = sourceAt(evaluation, i);
    if (source === 'lease') side.leases?.unspend(item.policy, item.key, item.cost);
    else consumed.push({ item, store: side.storeOf(item.policy, source) });
  });
  try {
    const decisions = [...evaluation.decisions];
    for (const store of new Set(consumed.map((c) => c.store))) {
      const part = consumed.filter((c) => c.store === store).map((c) => c.item);
      const refunded = await side
        .run(store, 'refund', () => store.refund(part))
        .finally(() => {
          if (store === side.store) void side.feed.changed(part);
        });
      side.released(part.filter((item) => item.count === 'release' && item.cost > 0));
      part.forEach((item, j) => {
        const decision = elementAt(refunded, j, "the store's reply to refund");
        decisions[evaluation.items.indexOf(item)] = { ...decision, allowed: true, retryAfterMs: 0 };
      });
    }
    evaluation.decisions = decisions;
  } catch (error) {
    side.reporter.report(
      error,
      evaluation.items.map((i) => i.policy.name),
    );
  }
}
