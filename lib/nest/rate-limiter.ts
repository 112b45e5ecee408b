import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';

import { AdapterRegistry } from '../contexts/adapter-registry.js';
import type { ContextType } from '../contexts/context-adapter.js';
import { DecisionEngine } from '../engine/decision-engine.js';
import { DecisionEvents } from '../limiter/decision-events.js';
import {
  attachEnhancers,
  attachOutcomeObserver,
  attachSettlement,
  attachShedding,
  detachShedding,
} from '../limiter/handler-enhancers.js';
import { OutcomeRefunds } from '../limiter/outcome.js';
import { cannotCharge, Settlements } from '../limiter/settlement.js';
import { RequestResolver } from '../limiter/request-items.js';
import { RequestLimiter, type RequestLimiterParts } from '../limiter/request-limiter.js';
import type { ModuleLists } from '../limiter/screening.js';
import { SheddingGate } from '../limiter/shedding-gate.js';
import { SkipWatch } from '../limiter/skip-watch.js';
import { StepEvaluator } from '../limiter/step-evaluation.js';
import { loadMetrics } from '../metrics/otel-metrics.js';
import { coveredGlobally, refuseUnguarded } from '../planning/guard-coverage.js';
import { ActualCostCap } from '../policy/debt-cap.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import { ReservationScopes } from '../service/reservation-scopes.js';
import { type RoutePlan, RoutePlanner } from '../planning/route-planner.js';
import { LoadShedder } from '../shedding/load-shedder.js';
import { EventLoopWatch } from '../shedding/loop-delay.js';
import { closedOnFailure, closeOwned, type RateLimitStores } from '../stores/rate-limit-stores.js';
import type { Clock } from '../util/clock.js';
import { limiterSettings } from './limiter-settings.js';
import { RATE_LIMIT_CLOCK, RATE_LIMIT_STORES } from './rate-limit.constants.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import { recordPolicies } from './policy-recording.js';
import { warnAtStart } from './start-warnings.js';

/** The module's options turned into the request path's parts, and what start-up checks later. */
interface Assembly {
  readonly parts: RequestLimiterParts;
  readonly logger: Logger;
  readonly lists: ModuleLists;
  readonly debtCap: ActualCostCap;
}

/** Checks the options (a bad one stops the start) and makes the engine and the request path's parts. */
function assemble(
  options: RateLimitModuleOptions,
  stores: RateLimitStores,
  clock: Clock,
  reflector: Reflector,
  httpAdapterHost: HttpAdapterHost,
  moduleRef: ModuleRef,
): Assembly {
  const logger = new Logger('RateLimit');
  const settings = limiterSettings(options, logger);
  const { headers, failMode, instances, mode, timeoutMs, denyCacheMs, ipv6Prefix, trust, lists, key, shedding } =
    settings;
  const { onError } = options;
  const engine = new DecisionEngine({ stores, clock, timeoutMs, denyCacheMs, instances, logger, onError });
  const events = new DecisionEvents(logger, options.onDecision);
  const debtCap = new ActualCostCap(logger);
  const resolver = new RequestResolver(engine, options.user, logger, new SkipWatch(logger, events));
  const planner = new RoutePlanner(
    {
      defaults: options.defaults ?? [],
      failMode,
      mode,
      hasUserOption: options.user !== undefined,
      moduleLists: lists.allow !== undefined || lists.deny !== undefined,
      guardsPlaced: options.global === false,
      key,
    },
    reflector,
  );
  const adapters = new AdapterRegistry({ trust, ipv6Prefix, logger, httpAdapterHost, moduleRef });
  const parts: RequestLimiterParts = {
    engine,
    planner,
    events,
    adapters,
    resolver,
    steps: new StepEvaluator(engine, resolver, lists, events),
    outcomes: new OutcomeRefunds(engine),
    settlements: new Settlements(engine, debtCap),
    headers,
    shedding:
      shedding === undefined
        ? undefined
        : new SheddingGate(new LoadShedder(shedding), events, engine, planner, adapters),
  };
  return { parts, logger, lists, debtCap };
}

/**
 * The module's limiter: made from its options at start, it plans every handler, places the guards Nest
 * would not, loads the adapters of the application's contexts and warns; each request then goes through
 * RequestLimiter (lib/limiter/). The guard, the interceptor and RateLimitService inject it.
 */
@Injectable()
export class RateLimiter extends RequestLimiter implements OnModuleInit, OnModuleDestroy {
  readonly logger: Logger;
  private readonly contexts: ReadonlySet<ContextType>;
  private readonly lists: ModuleLists;
  /** Some microservice handler has policies (so the module's lists apply to messages, which have no address). */
  private readonly rpcPolicies: boolean;
  /** With `global: false`, the handlers with policies that no guard of their own covers (checked at init). */
  private readonly unguarded: readonly RoutePlan[];
  /** The reservations of RateLimitService.reserve() each HTTP request makes: the guards enter its scope. */
  readonly scopes: ReservationScopes;
  /** Clamps the actual costs of settlements at the debt cap, reported once per policy (settle and reserve()). */
  readonly debtCap: ActualCostCap;
  /** The module's stores: their connections are closed when the start fails here. */
  private readonly stores: RateLimitStores;
  /** With the `shedding` option: the watch of the event loop's delay, from start to destroy. */
  private loopWatch: EventLoopWatch | undefined;
  /** The handlers outside HTTP, whose load shedding this application takes off when it closes. */
  private readonly outsideHttp: readonly { classRef: object }[];

  constructor(
    @Inject(RATE_LIMIT_OPTIONS) readonly options: RateLimitModuleOptions,
    @Inject(RATE_LIMIT_STORES) stores: RateLimitStores,
    @Inject(RATE_LIMIT_CLOCK) clock: Clock,
    reflector: Reflector,
    private readonly discovery: DiscoveryService,
    scanner: MetadataScanner,
    httpAdapterHost: HttpAdapterHost,
    private readonly moduleRef: ModuleRef,
  ) {
    const { parts, logger, lists, debtCap } = closedOnFailure(stores, () =>
      assemble(options, stores, clock, reflector, httpAdapterHost, moduleRef),
    );
    super(parts);
    this.stores = stores;
    this.logger = logger;
    this.debtCap = debtCap;
    this.lists = lists;
    this.scopes = new ReservationScopes(logger, () => httpAdapterHost.httpAdapter?.getHttpServer());
    const application = closedOnFailure(stores, () => this.planner.walk(discovery, scanner, moduleRef));
    // The guard on microservice and gateway handlers whatever `global` says: a global RateLimitGuard of the
    // app's own may not reach them either (a hybrid app's microservice, gateways before Nest 12).
    attachEnhancers(this, options.global !== false ? application.deferred : [], application.guarded);
    attachOutcomeObserver(application.counted);
    attachSettlement(application.settled);
    attachShedding(this.shedding, application.outsideHttp);
    this.outsideHttp = application.outsideHttp;
    this.contexts = application.contexts;
    this.rpcPolicies = application.guarded.some(({ context }) => context === 'rpc');
    this.unguarded = application.unguarded;
  }

  /**
   * Loads the adapters of the contexts the application has (and so their optional packages), and warns. A check
   * that stops the start closes the feed and the module's connections first: Nest calls no shutdown hook then.
   */
  async onModuleInit(): Promise<void> {
    try {
      await this.start();
    } catch (error) {
      await this.engine.dispose().catch(() => undefined);
      await closeOwned(this.stores);
      throw error;
    }
  }

  private async start(): Promise<void> {
    // Global guards are known once Nest has applied the application's providers: here, not in the constructor.
    // (Microservice and gateway handlers carry the limiter's own guard, for where a global one does not reach.)
    if (this.unguarded.length > 0 && !coveredGlobally(this.discovery, this.moduleRef)) refuseUnguarded(this.unguarded);
    await Promise.all(['http' as const, ...this.contexts].map((type) => this.adapters.load(type)));
    // At start, not at import: a MeterProvider registered before the application bootstraps is the one used.
    const shedder = this.shedding?.shedder;
    const metrics = await loadMetrics(
      () => this.engine.breakerStates(),
      () => shedder,
    );
    if (shedder !== undefined && shedder.settings.maxEventLoopDelayMs > 0) {
      this.loopWatch = new EventLoopWatch((delayMs) => shedder.loopDelay(delayMs));
    }
    this.engine.metrics = metrics;
    this.events.metrics = metrics;
    this.refuseUnsettleable();
    await this.engine.feed.start();
    // The overrides in force before the first request (a store that fails now: read again until it answers).
    await this.engine.overrides.refresh();
    await recordPolicies(
      this.planner.declared(),
      (policy) => this.engine.storeOf(policy),
      this.engine.timeoutMs,
      this.logger,
    );
    warnAtStart(
      {
        declared: this.planner.declared(),
        storeOf: (policy) => this.engine.storeOf(policy),
        postgres: this.options.postgres !== undefined,
        rpcWithAddressLists:
          this.rpcPolicies && (this.lists.allow?.hasAddresses === true || this.lists.deny?.hasAddresses === true),
      },
      this.logger,
    );
  }

  /** A `settle` policy's overrun is charged through its store's charge(): a store without one stops the start. */
  private refuseUnsettleable(): void {
    for (const { policy, where } of this.planner.declared()) {
      const store = this.engine.storeOf(policy);
      if (policy.source.settle !== undefined && store.charge === undefined) {
        throw new RateLimitPolicyError(
          cannotCharge(store).message.replace(/^nest-rate-limit: /, 'settles its charge, but '),
          {
            policy: policy.name,
            field: 'settle',
            where,
          },
        );
      }
    }
  }

  /** Lets the refunds and settlements of ended invocations reach the store before the module closes its connections. */
  async onModuleDestroy(): Promise<void> {
    this.loopWatch?.close();
    detachShedding(this.shedding, this.outsideHttp);
    this.scopes.close();
    await this.refundsSettled();
    await this.engine.dispose();
  }
}
