import type { Logger } from '../util/logger.js';

import type { Clock } from '../util/clock.js';
import type { RateLimitMetrics, StoreName, StoreOperation } from '../metrics/otel-metrics.js';
import type { FailMode, RateLimitDecision, RateLimitDecisionSource, ResolvedPolicy } from '../policy/policy.types.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';
import type { EngineStore, RateLimitStoreCall } from '../stores/engine-store.js';
import type { RateLimitStores } from '../stores/rate-limit-stores.js';
import { CircuitBreaker } from './circuit-breaker.js';
import type { DenyCache } from './coherence/deny-cache.js';
import { OverlongWaits } from './overlong-waits.js';
import { compensate } from './compensation.js';
import { resolveFailures } from './fail-modes.js';
import { FailureReporter } from './failure-reporter.js';
import { LimitVariants } from './limit-variants.js';
import { LocalFallback } from './local-fallback.js';
import { StoreCalls } from './store-calls.js';
import { type OnFailure, StoreConsume } from './store-consume.js';
import type { ChangeFeed } from './coherence/invalidation-feed.js';
import type { OverrideBook } from './overrides/override-book.js';
import { coherenceOf } from './coherence-parts.js';
import { acrossTwoStores } from './two-stores.js';
import { inDryRun, withDryRuns } from './overrides/shadow-peek.js';
import {
  type EngineItem,
  type Evaluation,
  type FailModeDecision,
  type ItemOverride,
  NOTHING,
  StoreUnavailable,
} from './evaluation.js';
import type { LeaseBook } from './leases/lease-book.js';
import { consumeWithLeases } from './leases/leased-items.js';

export {
  denies,
  type EngineItem,
  type Evaluation,
  type FailModeDecision,
  NOTHING,
  sourceAt,
  StoreUnavailable,
} from './evaluation.js';

export interface DecisionEngineOptions {
  readonly stores: RateLimitStores;
  readonly clock: Clock;
  readonly timeoutMs: number;
  /** App instances sharing the store: the default local limit of 'local' policies (default 1). */
  readonly instances?: number;
  readonly logger: Logger;
  readonly onError?: (error: Error, policy: string) => void;
  /** How long a denial of the store answers without asking it again, in ms (the `denyCacheMs` option); 0: never. */
  readonly denyCacheMs?: number;
  /**
   * The real time (ms, monotonic) by which the cache of denials judges how long ago a denial was sent and the feed
   * last confirmed (default `performance.now`); the fleet simulation gives its virtual time, so that a run does
   * not depend on how fast the machine runs it.
   */
  readonly realNow?: () => number;
}

/** Whether a leased policy's item: some of its units may come from this instance's leases. */
const isLeased = (item: EngineItem): boolean => item.policy.lease !== undefined;

/**
 * The decision engine: knows stores and policies, no HTTP and no Nest context. One call decides the items
 * of a request all-or-nothing: one store call, or, when quotas live in a second store (PostgreSQL beside
 * Redis), the rate limits first and the quotas only if those allowed, refunded if a quota denies. It keeps
 * a circuit breaker per store, the local cache of denials and the failure reporter, and applies fail modes.
 */
export class DecisionEngine {
  /** Where rate-limit policies live, and where quotas do (the same store unless `postgres` is set). */
  readonly store: EngineStore;
  readonly quotaStore: EngineStore;
  readonly reporter: FailureReporter;
  /** Denials of a remote store, answered locally until they end (pointless for the in-process store). */
  readonly denyCache: DenyCache | undefined;
  /** Units this instance took ahead for leased policies (RateLimitPolicy.lease), where a store grants them. */
  readonly leases: LeaseBook | undefined;
  /** Changes outside decisions, between this cache of denials (and leases) and the other instances'. */
  readonly feed: ChangeFeed;
  /** Where 'local' policies are decided while their store fails (local-fallback.ts). */
  readonly local: LocalFallback;
  /** The overrides of limits per identity in force (RateLimitService.override), read from the stores. */
  readonly overrides: OverrideBook;
  private readonly calls: StoreCalls;
  private readonly overlong: OverlongWaits;
  /** One store call: its breaker, timeout and cache of denials, its fail modes (store-consume.ts). */
  private readonly consumer: StoreConsume;
  private readonly variants = new LimitVariants();
  /** OpenTelemetry instruments, set at module start when `@opentelemetry/api` is installed. */
  metrics: RateLimitMetrics | undefined;

  constructor(private readonly options: DecisionEngineOptions) {
    this.store = options.stores.rates;
    this.quotaStore = options.stores.quotas;
    this.reporter = new FailureReporter(options.logger, options.onError);
    ({
      denyCache: this.denyCache,
      leases: this.leases,
      overrides: this.overrides,
      feed: this.feed,
    } = coherenceOf(options, this.store, this.quotaStore, (policy) => this.storeOf(policy).overrides));
    this.overlong = new OverlongWaits(options.logger, () => this.metrics);
    this.calls = new StoreCalls(options.timeoutMs, options.logger, () => this.metrics);
    this.local = new LocalFallback(options.clock, options.instances ?? 1);
    this.consumer = new StoreConsume(this, this.calls, this.overlong, options.clock);
  }

  /** The module's `timeout`: the milliseconds a store call may take. */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /** The module's clock. */
  now(): number {
    return this.options.clock.now();
  }

  /** Stops the breakers' probes and the feed of changes (on shutdown). */
  async dispose(): Promise<void> {
    this.calls.dispose();
    this.overrides.close();
    await this.feed.dispose();
  }

  /** Each store with a breaker, and whether it is open (the breaker state gauge). */
  breakerStates(): Iterable<readonly [StoreName, boolean]> {
    return this.calls.breakerStates();
  }

  /**
   * One call of the request path to a store: under the store's breaker and timeout (but the in-process
   * store's, which answers synchronously and cannot hang), timed when metrics are on.
   */
  run<T>(store: EngineStore, operation: StoreOperation, call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T> {
    return this.calls.run(store, operation, call);
  }

  /** The circuit breaker of a store: each store fails, and recovers, on its own. */
  breakerFor(store: EngineStore): CircuitBreaker {
    return this.calls.breakerFor(store);
  }

  /** Counts concurrency slots given back: `items` are released concurrency items that had been admitted. */
  released(items: readonly EngineItem[]): void {
    if (this.metrics === undefined) return;
    for (const item of items) this.metrics.slots(item.policy.name, -1);
  }

  /**
   * The store of a policy: quotas go to `quotaStore`; a decision whose `source` is 'local' (sourceAt of its
   * evaluation) was made on the local store, where its units go back.
   */
  storeOf(policy: ResolvedPolicy, source?: RateLimitDecisionSource): EngineStore {
    if (source === 'local') return this.local.store;
    return policy.quota !== undefined ? this.quotaStore : this.store;
  }

  /**
   * A policy with this request's limit and burst (functions of the request: the caller's plan). The variants
   * share the policy's id, so its state: a key whose plan changes is decided from the units it already used.
   */
  withLimit(policy: ResolvedPolicy, limit: number, burst?: number): ResolvedPolicy {
    return this.variants.of(policy, limit, burst);
  }

  /**
   * Decides the items of a request after `before` (what an earlier step of the same request consumed).
   * Applies fail modes: a fail-open policy whose store fails is left out, a fail-local one is decided in this
   * process on its local limit, and when a fail-closed one's does, throws StoreUnavailable after giving back
   * what `before` and this call consumed.
   */
  decide(items: readonly EngineItem[], before: Evaluation = NOTHING): Promise<Evaluation> {
    if (this.overrides.shadows && items.some(inDryRun)) {
      return withDryRuns(this, items, () => this.acrossStores(items, before, 'fail-modes'));
    }
    return this.acrossStores(items, before, 'fail-modes');
  }

  /** Consumes items for RateLimitService, all-or-nothing across both stores; throws store failures. */
  async consumeAcross(
    items: readonly (RateLimitStoreItem & { override?: ItemOverride })[],
  ): Promise<RateLimitDecision[]> {
    const engineItems = items.map((item, order) => ({ ...item, failMode: 'closed' as const, order }));
    const across = () => this.acrossStores(engineItems, NOTHING, 'throw');
    const dryRuns = this.overrides.shadows && engineItems.some(inDryRun);
    const { decisions } = await (dryRuns ? withDryRuns(this, engineItems, across) : across());
    return decisions;
  }

  /**
   * Gives back what an evaluation consumed (a later step of its request denied): see compensation.ts. That can
   * under-admit, never over-admit.
   */
  compensate(evaluation: Evaluation): Promise<void> {
    return compensate(this, evaluation);
  }

  /**
   * Reports a failure to resolve a policy (a key or cost function threw) and applies its fail mode: throws
   * StoreUnavailable when one fails closed, else returns the decisions of the fail-open ones (for onDecision).
   */
  async failed(
    failures: readonly { item: { policy: ResolvedPolicy; failMode: FailMode; shadow?: boolean }; error: unknown }[],
    before: Evaluation,
  ): Promise<readonly FailModeDecision[]> {
    const { closed, failed } = resolveFailures(this, failures);
    if (closed !== undefined) await this.unavailable(closed, before, failed);
    return failed;
  }

  /**
   * The one protocol for one or two stores: the rate limits first, then the quotas only if those allowed,
   * the rate limits refunded if a quota denies. A request denied by one kind consumes nothing of the other.
   */
  private acrossStores(items: readonly EngineItem[], before: Evaluation, onFailure: OnFailure): Promise<Evaluation> {
    if (items.length === 0) return Promise.resolve(NOTHING);
    // One store (most apps): its call's Promise is the decision's, with no async frame of this one around it.
    if (this.quotaStore === this.store) return this.consumeOn(this.store, items, before, onFailure);
    const consumeOn = (store: EngineStore, part: readonly EngineItem[], after: Evaluation) =>
      this.consumeOn(store, part, after, onFailure);
    return acrossTwoStores(this, consumeOn, items, before, onFailure);
  }

  /**
   * The items of a request on one store: those this instance's leases cover are admitted here, the others go
   * to the store in one call (leased ones taking ahead); when the request is refused, the leases get back what
   * it spent of them.
   */
  private consumeOn(
    store: EngineStore,
    items: readonly EngineItem[],
    before: Evaluation,
    onFailure: OnFailure,
  ): Promise<Evaluation> {
    const book = onFailure === 'fail-modes' && store.grantsUpTo === true ? this.leases : undefined;
    if (book === undefined || !items.some(isLeased)) {
      return this.consumer.consume(store, items, before, onFailure);
    }
    return consumeWithLeases(book, items, this.options.clock, (forStore) =>
      this.consumer.consume(store, forStore, before, onFailure),
    );
  }

  /**
   * Refuses the request for the outage of fail-closed `policy`, after giving back what `before` consumed. The
   * wait the client is told is the store timeout (lib/responses/retry-after.ts rounds it).
   */
  async unavailable(policy: string, before: Evaluation, failed: readonly FailModeDecision[]): Promise<never> {
    await this.compensate(before);
    throw new StoreUnavailable(policy, this.options.timeoutMs, failed);
  }
}
