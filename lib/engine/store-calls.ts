import type { Logger } from '../util/logger.js';

import type { RateLimitMetrics, StoreName, StoreOperation } from '../metrics/otel-metrics.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import type { EngineStore, EngineStoreItem, RateLimitStoreCall } from '../stores/engine-store.js';
import { CircuitBreaker } from './circuit-breaker.js';

/** Consecutive store failures that open the circuit breaker, and how often it then probes the store. */
const BREAKER_THRESHOLD = 5;
const BREAKER_PROBE_MS = 500;

/** The timing of a call without a timeout (the in-process store's). */
const UNTIMED: RateLimitStoreCall = { timeoutMs: Infinity, queued: () => undefined, sent: () => undefined };

/** The `rate_limit.store` attribute of a store. */
export function storeName(store: EngineStore): StoreName {
  if (store.inProcess === true) return 'memory';
  const name = store.constructor.name;
  return name === 'RedisRateLimitStore' ? 'redis' : name === 'PostgresRateLimitStore' ? 'postgres' : 'custom';
}

/**
 * The calls of the request path to the stores: each store's circuit breaker and timeout (each store fails,
 * and recovers, on its own), and their durations when metrics are on.
 */
export class StoreCalls {
  private readonly breakers = new Map<EngineStore, CircuitBreaker>();

  constructor(
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    private readonly metrics: () => RateLimitMetrics | undefined,
  ) {}

  /** One call: under the store's breaker and timeout (but the in-process store's, which cannot hang), timed. */
  run<T>(store: EngineStore, operation: StoreOperation, call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T> {
    const metrics = this.metrics();
    if (metrics === undefined) return store.inProcess === true ? call(UNTIMED) : this.breakerFor(store).run(call);
    const guarded = store.inProcess === true ? () => call(UNTIMED) : () => this.breakerFor(store).run(call);
    return this.timed(metrics, store, operation, guarded);
  }

  /** run() of a consume, without a function per call where nothing times or guards it (the in-process store). */
  consume(store: EngineStore, items: readonly EngineStoreItem[]): Promise<RateLimitDecision[]> {
    if (store.inProcess === true && this.metrics() === undefined) return store.consume(items, UNTIMED);
    return this.run(store, 'consume', (timing) => store.consume(items, timing));
  }

  breakerFor(store: EngineStore): CircuitBreaker {
    let breaker = this.breakers.get(store);
    if (breaker === undefined) {
      breaker = new CircuitBreaker({
        timeoutMs: this.timeoutMs,
        threshold: BREAKER_THRESHOLD,
        probeIntervalMs: BREAKER_PROBE_MS,
        probe: store.ping === undefined ? undefined : () => (store.ping as () => Promise<unknown>).call(store),
        logger: this.logger,
      });
      this.breakers.set(store, breaker);
    }
    return breaker;
  }

  /** Each store with a breaker, and whether it is open (the breaker state gauge). */
  *breakerStates(): Iterable<readonly [StoreName, boolean]> {
    for (const [store, breaker] of this.breakers) yield [storeName(store), breaker.isOpen] as const;
  }

  /** Stops the breakers' probes (on shutdown). */
  dispose(): void {
    for (const breaker of this.breakers.values()) breaker.dispose();
  }

  private async timed<T>(
    metrics: RateLimitMetrics,
    store: EngineStore,
    operation: StoreOperation,
    call: () => Promise<T>,
  ): Promise<T> {
    const startedMs = performance.now();
    try {
      const result = await call();
      metrics.storeCall(storeName(store), operation, (performance.now() - startedMs) / 1000);
      return result;
    } catch (error) {
      const type = error instanceof Error ? error.name : typeof error;
      metrics.storeCall(storeName(store), operation, (performance.now() - startedMs) / 1000, type);
      throw error;
    }
  }
}
