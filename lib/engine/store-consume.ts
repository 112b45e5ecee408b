import type { Clock } from '../util/clock.js';
import type { RateLimitMetrics } from '../metrics/otel-metrics.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import type { EngineStore } from '../stores/engine-store.js';
import { checkedDecisions } from '../stores/store-defects.js';
import { withConcurrencyWaits } from './slot-wait.js';
import type { DenyCache } from './coherence/deny-cache.js';
import { fromCache, rememberDenials } from './coherence/cached-denials.js';
import { type FailureSide, storeFailure } from './fail-modes.js';
import type { LocalFallback } from './local-fallback.js';
import type { OverlongWaits } from './overlong-waits.js';
import type { StoreCalls } from './store-calls.js';
import { type EngineItem, type Evaluation, type FailModeDecision, NOTHING, withFailed } from './evaluation.js';

/** How one store call ends when the store fails: apply fail modes (requests) or throw (RateLimitService). */
export type OnFailure = 'fail-modes' | 'throw';

/** What one store call needs of the engine around it. */
export interface ConsumeSide extends FailureSide {
  /** Where rate-limit policies live: the store the deny cache answers for. */
  readonly store: EngineStore;
  readonly denyCache: DenyCache | undefined;
  readonly local: LocalFallback;
  /** Refuses the request for the outage of fail-closed `policy`, after giving back what `before` consumed. */
  unavailable(policy: string, before: Evaluation, failed: readonly FailModeDecision[]): Promise<never>;
}

/** Concurrency slots a decision took: allowed concurrency items that cost something. */
const slotsTaken = (items: readonly EngineItem[], decisions: readonly RateLimitDecision[]): EngineItem[] =>
  items.filter((item, i) => item.count === 'release' && item.cost > 0 && decisions[i]?.allowed === true);

/**
 * One store call of the decision engine: through the store's breaker and timeout (StoreCalls) and the cache of
 * denials, its reply checked and answered as the engine answers it, its failure given to the fail modes.
 */
export class StoreConsume {
  constructor(
    private readonly side: ConsumeSide,
    private readonly calls: StoreCalls,
    private readonly overlong: OverlongWaits,
    private readonly clock: Clock,
  ) {}

  /**
   * One store call for `items`, through the store's breaker and the deny cache. A store that decides in this
   * process (consumeNow), with no metrics to time it, decides here and now: no frame, one settled Promise.
   */
  consume(
    store: EngineStore,
    items: readonly EngineItem[],
    before: Evaluation,
    onFailure: OnFailure,
  ): Promise<Evaluation> {
    if (items.length === 0) return Promise.resolve(NOTHING);
    if (store.consumeNow === undefined || this.metrics !== undefined || this.cacheFor(store, onFailure) !== undefined) {
      return this.consumeCalled(store, items, before, onFailure);
    }
    try {
      const reply = store.consumeNow(items);
      if (reply === undefined) return this.consumeCalled(store, items, before, onFailure);
      const decisions = checkedDecisions<RateLimitDecision>(reply, items.length, "the store's reply to consume");
      return Promise.resolve(this.decided({ items, decisions }));
    } catch (error) {
      return this.callFailed(error, items, before, onFailure);
    }
  }

  /**
   * What a consume decided, the shared store's or the local one's, as the engine answers it: the wait of each
   * concurrency denial cut to CONCURRENCY_RETRY_MS (slot-wait.ts), and the slots taken counted.
   */
  decided(evaluation: Evaluation): Evaluation {
    const { items } = evaluation;
    this.overlong.check(evaluation.decisions);
    const decisions = withConcurrencyWaits(items, evaluation.decisions);
    const metrics = this.metrics;
    if (metrics !== undefined) {
      for (const item of slotsTaken(items, decisions)) metrics.slots(item.policy.name, 1);
    }
    return decisions === evaluation.decisions ? evaluation : { ...evaluation, decisions };
  }

  private get metrics(): RateLimitMetrics | undefined {
    return this.side.metrics;
  }

  /** The cache of denials that answers for `store`, if any. */
  private cacheFor(store: EngineStore, onFailure: OnFailure): DenyCache | undefined {
    return store === this.side.store && onFailure === 'fail-modes' ? this.side.denyCache : undefined;
  }

  /** consume() of a store's call: awaited under its breaker and timeout, through the deny cache. */
  private async consumeCalled(
    store: EngineStore,
    items: readonly EngineItem[],
    before: Evaluation,
    onFailure: OnFailure,
  ): Promise<Evaluation> {
    const cache = this.cacheFor(store, onFailure);
    const nowMs = cache === undefined ? 0 : this.clock.now();
    if (cache !== undefined) {
      const answered = fromCache(cache, items, nowMs);
      if (answered !== undefined) return answered;
    }
    const ticket = cache?.begin();
    try {
      const reply = await this.calls.consume(store, items);
      const decisions = checkedDecisions<RateLimitDecision>(reply, items.length, "the store's reply to consume");
      const decided = this.decided({ items, decisions });
      if (cache !== undefined && ticket !== undefined) {
        rememberDenials(cache, items, decided.decisions, nowMs, ticket);
      }
      return decided;
    } catch (error) {
      return await this.callFailed(error, items, before, onFailure);
    } finally {
      cache?.end();
    }
  }

  /** A store call failed: thrown (RateLimitService), or the fail modes of its items apply. */
  private async callFailed(
    error: unknown,
    items: readonly EngineItem[],
    before: Evaluation,
    onFailure: OnFailure,
  ): Promise<Evaluation> {
    if (onFailure === 'throw') throw error;
    const { closed, failed } = storeFailure(this.side, error, items);
    if (closed !== undefined) await this.side.unavailable(closed, before, failed);
    return withFailed(this.decided(await this.side.local.decide(items)), failed);
  }
}
