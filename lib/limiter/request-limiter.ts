import type { ExecutionContext } from '@nestjs/common';

import type { AdapterRegistry } from '../contexts/adapter-registry.js';
import type { ContextAdapter, ContextType } from '../contexts/context-adapter.js';
import { type DecisionEngine, denies, type Evaluation, NOTHING } from '../engine/decision-engine.js';
import type { RoutePlan, RoutePlanner } from '../planning/route-planner.js';
import type { RateLimitHeaders } from '../responses/rate-limit-headers.js';
import { conclude } from './conclusion.js';
import type { DecisionEvents } from './decision-events.js';
import { completesDeferrals } from './handler-enhancers.js';
import { type Decider, type DecisionPoint, Invocation, invocationOf, InvocationStateError } from './invocation.js';
import type { OutcomeRefunds } from './outcome.js';
import type { Settlements } from './settlement.js';
import { isPromise, type RequestResolver } from './request-items.js';
import type { SheddingGate } from './shedding-gate.js';
import type { StepEvaluator } from './step-evaluation.js';

/** The Promise of an invocation handle() had nothing (left) to decide for: one, settled, for all of them. */
export const DONE: Promise<void> = Promise.resolve();

/** What the per-request path works with, made once at start (nest/rate-limiter.ts). */
export interface RequestLimiterParts {
  readonly engine: DecisionEngine;
  readonly planner: RoutePlanner;
  /** onDecision and the log of shadow denials. */
  readonly events: DecisionEvents;
  readonly adapters: AdapterRegistry;
  readonly resolver: RequestResolver;
  /** Decides each step of an invocation: lists, items, one decision of the engine. */
  readonly steps: StepEvaluator;
  readonly outcomes: OutcomeRefunds;
  /** Settles the charges of `settle` policies once the handler's result is known. */
  readonly settlements: Settlements;
  readonly headers: RateLimitHeaders;
  /** Load shedding (the `shedding` option); undefined: off. */
  readonly shedding?: SheddingGate;
}

/**
 * The request path, in order: the plan of the handler (made at start), the items of this invocation
 * (keys, costs, limits), one decision of the engine, then the context's adapter writes headers and denies.
 * The guard, the interceptor and RateLimitService go through it; it knows no context itself.
 */
export class RequestLimiter implements Decider {
  readonly engine: DecisionEngine;
  readonly planner: RoutePlanner;
  readonly events: DecisionEvents;
  protected readonly outcomes: OutcomeRefunds;
  protected readonly settlements: Settlements;
  protected readonly adapters: AdapterRegistry;
  private readonly resolver: RequestResolver;
  private readonly steps: StepEvaluator;
  private readonly headers: RateLimitHeaders;
  readonly shedding: SheddingGate | undefined;

  constructor(parts: RequestLimiterParts) {
    this.engine = parts.engine;
    this.planner = parts.planner;
    this.events = parts.events;
    this.outcomes = parts.outcomes;
    this.settlements = parts.settlements;
    this.adapters = parts.adapters;
    this.resolver = parts.resolver;
    this.steps = parts.steps;
    this.headers = parts.headers;
    this.shedding = parts.shedding;
  }

  /**
   * Resolves once the refunds of invocations that have ended (counting by outcome) and their settlements
   * (`settle` policies) have reached the store.
   */
  async refundsSettled(): Promise<void> {
    await Promise.all([this.outcomes.settled(), this.settlements.settled()]);
  }

  /** True when there is nothing left to decide for this invocation (the interceptor's fast path). */
  isDecided(ctx: ExecutionContext): boolean {
    return Invocation.find(invocationOf(ctx))?.isDecided() === true;
  }

  /**
   * Decides an invocation: returns when it may proceed; otherwise the context's adapter throws its denial
   * (429, a GraphQL error, WsException, RpcException), its refusal (a deny list: 403 and the like) or
   * outage. Decides each invocation once, however many guards ask.
   */
  handle(ctx: ExecutionContext, point: DecisionPoint): Promise<void> {
    // Not an async function: an invocation decided already, or without policies, allocates no frame, and the
    // others one small one (decideNow). What throws here rejects, as an async function's would.
    try {
      return this.handleNow(ctx, point) ?? DONE;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** handle()'s work: undefined when it is over already, else the Promise of what is left. */
  private handleNow(ctx: ExecutionContext, point: DecisionPoint): Promise<void> | undefined {
    const type = ctx.getType<ContextType>();
    const adapter = this.adapters.get(type);
    if (adapter === undefined) {
      // A context of a third-party transport (not http, graphql, ws or rpc): no handler of it was planned,
      // and a @RateLimit on one stopped the start; nothing to decide here.
      if (!this.adapters.knows(type)) return undefined;
      return this.adapters.load(type).then((loaded) => this.handleWith(ctx, point, loaded));
    }
    return this.handleWith(ctx, point, adapter);
  }

  private handleWith(ctx: ExecutionContext, point: DecisionPoint, adapter: ContextAdapter): Promise<void> | undefined {
    const invocation = Invocation.of(adapter.invocation(ctx), ctx);
    const { state } = invocation;
    // A deferred invocation waits for the interceptor, whichever guard meets it on the way.
    if (state === 'decided' || (state === 'deferred' && point !== 'interceptor')) return undefined;
    const plan = this.planner.planFor(ctx.getClass(), ctx.getHandler());
    if (this.shedding === undefined) return this.decideWith(ctx, point, adapter, invocation, plan);
    // Load shedding first on HTTP: a request it refuses is never charged; one a policy refuses leaves at once.
    let slot = invocation.sheddingSlot();
    if (slot === undefined && state === 'new' && adapter.type === 'http') {
      slot = this.shedding.admitHttp(ctx, adapter, invocation, plan);
    }
    const pending = this.decideWith(ctx, point, adapter, invocation, plan);
    return pending === undefined || slot === undefined ? pending : this.shedding.releaseOnRefusal(pending, slot);
  }

  /** handleWith()'s decision of the invocation's policies, at `point`. */
  private decideWith(
    ctx: ExecutionContext,
    point: DecisionPoint,
    adapter: ContextAdapter,
    invocation: Invocation,
    plan: RoutePlan,
  ): Promise<void> | undefined {
    const { state } = invocation;
    if (state === 'deferred') return this.decideLate(ctx, adapter, invocation, plan);
    if (plan.policies.length === 0) {
      invocation.decide();
      return undefined;
    }
    // Global guards run before class and handler guards: when a user-keyed policy sees no user yet,
    // authentication may still be ahead. The other policies are decided now (so invocations your
    // authentication rejects still count against the IP), the user-keyed ones by the interceptor.
    if (point === 'global-guard' && plan.deferred && this.resolver.userOf(ctx, adapter) === undefined) {
      return this.decideEarly(ctx, adapter, invocation, plan);
    }
    invocation.decide();
    return this.decideNow(ctx, adapter, invocation, plan);
  }

  /** An invocation decided at one decision point, all of its policies at once (most invocations). */
  private async decideNow(
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    invocation: Invocation,
    plan: RoutePlan,
  ): Promise<void> {
    const step = { ctx, adapter, plan, entries: plan.policies, before: NOTHING, first: true };
    // The step's decision awaited here, not in a frame of the evaluator's: one async frame per decision.
    const begun = this.steps.begin(step);
    let evaluation: Evaluation;
    if (isPromise(begun)) evaluation = await begun;
    else {
      try {
        evaluation = await this.engine.decide(begun, NOTHING);
      } catch (error) {
        return this.steps.outage(error, step);
      }
      this.steps.told(evaluation, step);
    }
    if (this.shedding !== undefined && adapter.type !== 'http') invocation.noteCharge(evaluation);
    conclude(ctx, adapter, this.headers, this.events, [evaluation]);
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, evaluation);
    if (plan.settled) this.settlements.track(ctx, adapter, invocation, evaluation);
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
    // Deferred to nobody, its user-keyed policies would never be decided: refused before anything is charged.
    if (!completesDeferrals(ctx.getHandler())) {
      throw new InvocationStateError(
        `nest-rate-limit: the global guard cannot leave the user-keyed policies of ${plan.where} to the ` +
          'interceptor: the handler does not carry it, so they would never be decided (a bug of ' +
          'nest-rate-limit; please report it)',
      );
    }
    const early = await this.steps.evaluate({ ctx, adapter, plan, entries: plan.early, before: NOTHING, first: true });
    if (denies(early)) {
      invocation.decide(); // a denial ends it: nothing is left for the interceptor
      conclude(ctx, adapter, this.headers, this.events, [early]);
      return;
    }
    invocation.defer(this, early);
    // Watched from now on: a refusal of the route's own guards is an outcome too (HTTP sees its status).
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, early);
    if (plan.settled) this.settlements.track(ctx, adapter, invocation, early);
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
    const early = invocation.decideLate();
    const late = await this.steps.evaluate({ ctx, adapter, plan, entries: plan.late, before: early, first: false });
    if (denies(late)) await this.engine.compensate(early);
    else if (this.shedding !== undefined && adapter.type !== 'http') {
      invocation.noteCharge(early);
      invocation.noteCharge(late);
    }
    conclude(ctx, adapter, this.headers, this.events, [early, late]);
    if (plan.counted) this.outcomes.track(ctx, adapter, invocation, late);
    if (plan.settled) this.settlements.track(ctx, adapter, invocation, late);
  }
}
