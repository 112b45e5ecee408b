import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';

import { importPeer } from '../util/optional-peer.js';
import type { Criticality } from '../policy/criticality.js';
import type { RateLimitDecisionSource } from '../policy/policy.types.js';

/**
 * How one policy of a request was decided, as the `rate_limit.outcome` attribute: by its store (allowed,
 * denied; shadow-denied for a shadow policy that would have denied), by the local cache of denials
 * (deny-cache), or not by its store because that failed (failed-open: left out; failed-closed: refused;
 * failed-local: decided, allowed or denied, in this process on its local limit), or not at all because its
 * key function returned undefined for the request (skipped).
 */
export type RateLimitMetricOutcome =
  'allowed' | 'denied' | 'shadow-denied' | 'failed-open' | 'failed-closed' | 'failed-local' | 'deny-cache' | 'skipped';

/** One store call: which store and operation, and how long it took. */
export type StoreName = 'memory' | 'redis' | 'postgres' | 'custom';
export type StoreOperation = 'consume' | 'peek' | 'refund' | 'charge';

/** Where the breaker state gauge reads from: each store's breaker, open or not, when collected. */
export type BreakerStates = () => Iterable<readonly [StoreName, boolean]>;

/** Where the load-shedding gauges read from (the `shedding` option): the limit and the requests in flight. */
export type SheddingState = () => { readonly limit: number; readonly inFlight: number } | undefined;

/**
 * The buckets of `rate_limit.store.duration`, in seconds: from 0.1 ms (a Redis call on loopback) to 1 s, past
 * any store timeout. The SDK's default buckets (0 to 10,000) are made for milliseconds: every store call would
 * fall into the first few, and a percentile read from them would mean nothing.
 */
export const STORE_DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

/**
 * What the decision engine reports to the module's instruments. Without `@opentelemetry/api` there is no
 * instance at all and the request path pays one undefined check per decision.
 */
export interface RateLimitMetrics {
  /** One policy decided; `source` (the `rate_limit.source` attribute) where it was decided, none when skipped. */
  /** `override`: how an override of the key's limit bore on it (applied, or a dry run's answer), if one did. */
  decision(
    policy: string,
    outcome: RateLimitMetricOutcome,
    source?: RateLimitDecisionSource,
    override?: { readonly shadow: boolean; readonly allowed: boolean },
  ): void;
  /** A store call of `seconds`; `error` (the error's name) when it failed. */
  storeCall(store: StoreName, operation: StoreOperation, seconds: number, error?: string): void;
  /** `delta` slots of a concurrency policy taken (+) or given back (-). */
  slots(policy: string, delta: number): void;
  /** A wait the store asked for beyond the policy's longest and the clock skew allowed, answered bounded. */
  overlongWait(policy: string): void;
  /** A request load shedding refused (`rate_limit.shed`, by `rate_limit.criticality`). */
  shed(criticality: Criticality): void;
}

/**
 * The OpenTelemetry instruments, made once at module start from the global MeterProvider (so one registered
 * before Nest bootstraps is used). Not exported: the published types name no type of the optional peer.
 */
class OtelMetrics implements RateLimitMetrics {
  private readonly decisions: Counter;
  private readonly storeDuration: Histogram;
  private readonly slotCount: UpDownCounter;
  private readonly overlong: Counter;
  private readonly shedCount: Counter;

  constructor(meter: Meter, breakers: BreakerStates, shedding: SheddingState) {
    this.decisions = meter.createCounter('rate_limit.decisions', {
      description: 'Policies decided, by policy, outcome and source',
      unit: '{decision}',
    });
    this.storeDuration = meter.createHistogram('rate_limit.store.duration', {
      description: 'Duration of rate-limit store calls',
      unit: 's',
      advice: { explicitBucketBoundaries: [...STORE_DURATION_BUCKETS] },
    });
    this.slotCount = meter.createUpDownCounter('rate_limit.concurrency.slots', {
      description: 'Concurrency slots held by invocations in flight',
      unit: '{slot}',
    });
    this.overlong = meter.createCounter('rate_limit.state.overlong', {
      description:
        "Waits the store asked for beyond the policy's longest (a clock ahead, state of another shape), answered bounded",
      unit: '{decision}',
    });
    this.shedCount = meter.createCounter('rate_limit.shed', {
      description: 'Requests load shedding refused, by criticality',
      unit: '{request}',
    });
    this.sheddingGauges(meter, shedding);
    meter
      .createObservableGauge('rate_limit.breaker.state', {
        description: "State of a store's circuit breaker: 0 closed, 1 open",
        unit: '1',
      })
      .addCallback((result) => {
        for (const [store, open] of breakers()) result.observe(open ? 1 : 0, { 'rate_limit.store': store });
      });
  }

  decision(
    policy: string,
    outcome: RateLimitMetricOutcome,
    source?: RateLimitDecisionSource,
    override?: { readonly shadow: boolean; readonly allowed: boolean },
  ): void {
    const attributes: Attributes = { 'rate_limit.policy': policy, 'rate_limit.outcome': outcome };
    if (source !== undefined) attributes['rate_limit.source'] = source;
    if (override !== undefined) {
      attributes['rate_limit.override'] = override.shadow ? 'shadow' : 'applied';
      attributes['rate_limit.override.allowed'] = override.allowed;
    }
    this.decisions.add(1, attributes);
  }

  storeCall(store: StoreName, operation: StoreOperation, seconds: number, error?: string): void {
    const attributes: Attributes = { 'rate_limit.store': store, 'rate_limit.operation': operation };
    if (error !== undefined) attributes['error.type'] = error;
    this.storeDuration.record(seconds, attributes);
  }

  slots(policy: string, delta: number): void {
    this.slotCount.add(delta, { 'rate_limit.policy': policy });
  }

  overlongWait(policy: string): void {
    this.overlong.add(1, { 'rate_limit.policy': policy });
  }

  shed(criticality: Criticality): void {
    this.shedCount.add(1, { 'rate_limit.criticality': criticality });
  }

  /** The adaptive limit and the requests in flight, observed when collected (nothing without `shedding`). */
  private sheddingGauges(meter: Meter, shedding: SheddingState): void {
    meter
      .createObservableGauge('rate_limit.shedding.limit', {
        description: 'The adaptive concurrency limit of load shedding (requests in flight)',
        unit: '{request}',
      })
      .addCallback((result) => {
        const state = shedding();
        if (state !== undefined) result.observe(state.limit);
      });
    meter
      .createObservableGauge('rate_limit.shedding.in_flight', {
        description: 'Requests admitted by load shedding and not yet over',
        unit: '{request}',
      })
      .addCallback((result) => {
        const state = shedding();
        if (state !== undefined) result.observe(state.inFlight);
      });
  }
}

/**
 * The module's instruments, or undefined when `@opentelemetry/api` is not installed (an optional peer) or no
 * MeterProvider is registered: the API's meter is then its no-op one for good (it has no proxy that a
 * provider registered later would reach), and timing each store call for it would be work on every request
 * for nothing. Loaded at module start, never at import.
 */
export async function loadMetrics(
  breakers: BreakerStates,
  shedding: SheddingState = () => undefined,
): Promise<RateLimitMetrics | undefined> {
  let api: typeof import('@opentelemetry/api');
  try {
    api = await importPeer<typeof api>('@opentelemetry/api');
  } catch {
    return undefined;
  }
  const meter = api.metrics.getMeter('nest-rate-limit');
  return meter === api.createNoopMeter() ? undefined : new OtelMetrics(meter, breakers, shedding);
}
