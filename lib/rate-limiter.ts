import {
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';

import type { Clock } from './clock.js';
import { AdapterRegistry } from './contexts/adapter-registry.js';
import type { ContextAdapter, ContextType } from './contexts/context-adapter.js';
import { DecisionEngine, denies, NOTHING } from './engine/decision-engine.js';
import { DecisionEvents } from './request/decision-events.js';
import { limiterSettings } from './limiter-settings.js';
import { loadMetrics } from './metrics/otel-metrics.js';
import type { ModuleLists } from './lists/screening.js';
import {
  attachEnhancers,
  attachOutcomeObserver,
  DECIDED,
  type Decider,
  type DecisionPoint,
  DEFERRED,
  EARLY,
  type Invocation,
  invocationOf,
  LIMITER,
  STATE,
} from './request/handler-enhancers.js';
import { coveredGlobally, refuseUnguarded } from './planning/guard-coverage.js';
import { type RoutePlan, RoutePlanner } from './planning/route-planner.js';
import { RATE_LIMIT_CLOCK, RATE_LIMIT_STORES } from './rate-limit.constants.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitHeaders, RateLimitModuleOptions } from './rate-limit.options.js';
import { conclude } from './request/conclusion.js';
import { OutcomeRefunds } from './request/outcome.js';
import { RequestResolver } from './request/request-items.js';
import { SkipWatch } from './request/skip-watch.js';
import { StepEvaluator } from './request/step-evaluation.js';
import { warnAtStart } from './start-warnings.js';
import type { RateLimitStores } from './stores/rate-limit-stores.js';

/**
 * The request path, in order: the plan of the handler (made at start), the items of this invocation
 * (keys, costs, limits), one decision of the engine, then the context's adapter writes headers and denies.
 * The guard, the interceptor and RateLimitService go through it; it knows no context itself.
 */
@Injectable()
export class RateLimiter implements Decider, OnModuleInit, OnModuleDestroy {
  readonly engine: DecisionEngine;
  readonly planner: RoutePlanner;
  /** onDecision and the log of shadow denials. */
  readonly events: DecisionEvents;
  private readonly logger = new Logger('RateLimit');
  private readonly resolver: RequestResolver;
  /** Decides each step of an invocation: lists, items, one decision of the engine. */
  private readonly steps: StepEvaluator;
  private readonly outcomes: OutcomeRefunds;
  private readonly headers: RateLimitHeaders;
  private readonly contexts: ReadonlySet<ContextType>;
  private readonly lists: ModuleLists;
  /** Some microservice handler has policies (so the module's lists apply to messages, which have no address). */
  private readonly rpcPolicies: boolean;
  private readonly adapters: AdapterRegistry;
  /** With `global: false`, the handlers with policies that no guard of their own covers (checked at init). */
  private readonly unguarded: readonly RoutePlan[];

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
    const { headers, failMode, instances, mode, timeoutMs, ipv6Prefix, trust, lists, key } = limiterSettings(
      options,
      this.logger,
    );
    this.headers = headers;
    this.lists = lists;
    this.adapters = new AdapterRegistry({ trust, ipv6Prefix, logger: this.logger, httpAdapterHost, moduleRef });
    this.engine = new DecisionEngine({
      stores,
      clock,
      timeoutMs,
      instances,
      logger: this.logger,
      onError: options.onError,
    });
    this.events = new DecisionEvents(this.logger, options.onDecision);
    this.resolver = new RequestResolver(
      this.engine,
      options.user,
      this.logger,
      new SkipWatch(this.logger, this.events),
    );
    this.outcomes = new OutcomeRefunds(this.engine);
    this.steps = new StepEvaluator(this.engine, this.resolver, this.lists);
    this.planner = new RoutePlanner(
      {
        defaults: options.defaults ?? [],
        failMode,
        mode,
        hasUserOption: options.user !== undefined,
        moduleLists: this.lists.allow !== undefined || this.lists.deny !== undefined,
        guardsPlaced: options.global === false,
        key,
      },
      reflector,
    );
    const application = this.planner.walk(discovery, scanner, moduleRef);
    // The guard on microservice and gateway handlers whatever `global` says: a global RateLimitGuard of the
    // app's own may not reach them either (a hybrid app's microservice, gateways before Nest 12).
    attachEnhancers(this, options.global !== false ? application.deferred : [], application.guarded);
    attachOutcomeObserver(application.counted);
    this.contexts = application.contexts;
    this.rpcPolicies = application.guarded.some(({ context }) => context === 'rpc');
    this.unguarded = application.unguarded;
  }

  /** Loads the adapters of the contexts the application has (and so their optional packages), and warns. */
  async onModuleInit(): Promise<void> {
    // Global guards are known once Nest has applied the application's providers: here, not in the constructor.
    // (Microservice and gateway handlers carry the limiter's own guard, for where a global one does not reach.)
    if (this.unguarded.length > 0 && !coveredGlobally(this.discovery, this.moduleRef)) refuseUnguarded(this.unguarded);
    await Promise.all(['http' as const, ...this.contexts].map((type) => this.adapters.load(type)));
    // At start, not at import: a MeterProvider registered before the application bootstraps is the one used.
    const metrics = await loadMetrics(() => this.engine.breakerStates());
    this.engine.metrics = metrics;
    this.events.metrics = metrics;
    await this.engine.feed.start();
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

  /** Lets the refunds of ended invocations reach the store before the module closes its connections. */
  async onModuleDestroy(): Promise<void> {
    await this.outcomes.settled();
    await this.engine.dispose();
  }

  /** Resolves once the refunds of invocations that have ended (counting by outcome) have reached the store. */
  refundsSettled(): Promise<void> {
    return this.outcomes.settled();
  }

  /** True when there is nothing left to decide for this invocation (the interceptor's fast path). */
  isDecided(ctx: ExecutionContext): boolean {
    return invocationOf(ctx)[STATE] === DECIDED;
  }

  /**
   * Decides an invocation: returns when it may proceed; otherwise the context's adapter throws its denial
   * (429, a GraphQL error, WsException, RpcException), its refusal (a deny list: 403 and the like) or
   * outage. Decides each invocation once, however many guards ask.
   */
  async handle(ctx: ExecutionContext, point: DecisionPoint): Promise<void> {
    const type = ctx.getType<ContextType>();
    let adapter = this.adapters.get(type);
    if (adapter === undefined) {
      // A context of a third-party transport (not http, graphql, ws or rpc): no handler of it was planned,
      // and a @RateLimit on one stopped the start; nothing to decide here.
      if (!this.adapters.knows(type)) return;
      adapter = await this.adapters.load(type);
    }
    const invocation = adapter.invocation(ctx) as Invocation;
    const state = invocation[STATE];
    if (state === DECIDED || (state === DEFERRED && point !== 'interceptor')) return;
    const plan = this.planner.planFor(ctx.getClass(), ctx.getHandler());
    if (state === DEFERRED) return this.decideLate(ctx, adapter, invocation, plan);
    if (plan.policies.length === 0) {
      invocation[STATE] = DECIDED;
      return;
    }
    // Global guards run before class and handler guards: when a user-keyed policy sees no user yet,
    // authentication may still be ahead. The other policies are decided now (so invocations your
    // authentication rejects still count against the IP), the user-keyed ones by the interceptor.
    if (point === 'global-guard' && plan.deferred && this.resolver.userOf(ctx, adapter) === undefined) {
      return this.decideEarly(ctx, adapter, invocation, plan);
    }
    invocation[STATE] = DECIDED;
    const evaluation = await this.steps.evaluate({
      ctx,
      adapter,
      plan,
      entries: plan.policies,
      before: NOTHING,
      first: true,
    });
    conclude(ctx, adapter, this.headers, this.events, [evaluation]);
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, evaluation);
  }

  /**
   * The global guard's part of a deferred invocation: every policy but the user-keyed ones, which wait for the
   * interceptor (decideLate). A denial here ends the invocation.
   */
  private async decideEarly(
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    invocation: Invocation,
    plan: RoutePlan,
  ): Promise<void> {
    invocation[STATE] = DEFERRED;
    invocation[LIMITER] = this;
    const early = await this.steps.evaluate({ ctx, adapter, plan, entries: plan.early, before: NOTHING, first: true });
    invocation[EARLY] = early;
    if (denies(early)) {
      invocation[STATE] = DECIDED;
      conclude(ctx, adapter, this.headers, this.events, [early]);
    }
    // Watched from now on: a refusal of the route's own guards is an outcome too (HTTP sees its status).
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, early);
  }

  /**
   * The interceptor's part of a deferred invocation: the user-keyed policies, now that authentication has run;
   * a denial gives back what the early part consumed.
   */
  private async decideLate(
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    invocation: Invocation,
    plan: RoutePlan,
  ): Promise<void> {
    invocation[STATE] = DECIDED;
    const early = invocation[EARLY] ?? NOTHING;
    const late = await this.steps.evaluate({ ctx, adapter, plan, entries: plan.late, before: early, first: false });
    if (denies(late)) await this.engine.compensate(early);
    conclude(ctx, adapter, this.headers, this.events, [early, late]);
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, late);
  }
}
