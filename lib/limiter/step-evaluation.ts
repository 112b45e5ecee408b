import type { ExecutionContext } from '@nestjs/common';

import type { ContextAdapter } from '../contexts/context-adapter.js';
import { type DecisionEngine, type EngineItem, type Evaluation, StoreUnavailable } from '../engine/decision-engine.js';
import { chosenWait } from '../responses/retry-after.js';
import { type ModuleLists, screen } from './screening.js';
import type { PlanEntry, RoutePlan } from '../planning/route-planner.js';
import { denyListMessage, unavailableMessage } from '../responses/rate-limit-exceptions.js';
import type { DecisionEvents } from './decision-events.js';
import { isPromise, type RequestResolver } from './request-items.js';

/**
 * The evaluation of an invocation the module's allow list let through: no policy runs, so nothing is
 * consumed and no header is written; a later decision point only checks the remaining policies' deny lists.
 */
const ALLOWED: Evaluation = Object.freeze({ items: [], decisions: [] });

/**
 * One decision point's part of an invocation: the `entries` of its plan to decide, after `before` (what an
 * earlier decision point of the invocation decided); the module's lists are checked at the `first` one.
 */
export interface Step {
  readonly ctx: ExecutionContext;
  readonly adapter: ContextAdapter;
  readonly plan: RoutePlan;
  readonly entries: readonly PlanEntry[];
  readonly before: Evaluation;
  readonly first: boolean;
}

/**
 * Decides one step of an invocation: the lists, then the items (keys, costs, limits) of the policies left,
 * then one decision of the engine. A deny list and a fail-closed outage end the invocation here, through the
 * context's adapter.
 */
export class StepEvaluator {
  constructor(
    private readonly engine: DecisionEngine,
    private readonly resolver: RequestResolver,
    private readonly lists: ModuleLists,
    /** Told of the policies fail modes decided (the store's decisions are told at the conclusion). */
    private readonly events: DecisionEvents,
  ) {}

  /**
   * Applies the lists (when the handler has lists), resolves the items of the step's entries left and decides
   * them; a deny list or an outage of a fail-closed policy stops here. A step without lists whose items resolve
   * at once (most) goes straight to the engine: one async frame around its decision.
   */
  evaluate(step: Step): Promise<Evaluation> {
    const begun = this.begin(step);
    return isPromise(begun) ? begun : this.decided(this.engine.decide(begun, step.before), step);
  }

  /**
   * The start of evaluate(): the items of a step to decide, when it has no lists and they resolved at once
   * (most steps); otherwise the Promise of the whole evaluation. The caller then awaits the engine's decision
   * of the items, in its own frame, and ends it with told() (or outage() for what the decision threw).
   */
  begin(step: Step): EngineItem[] | Promise<Evaluation> {
    if (step.plan.lists) return this.evaluateSlowly(step);
    try {
      const resolved = this.resolver.resolve(step.entries, step.ctx, step.adapter, step.plan.where);
      if (isPromise(resolved) || resolved.failures !== undefined) return this.evaluateSlowly(step, resolved);
      return resolved.items;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The engine's decision of a step begun with its items, its fail modes told. */
  told(evaluation: Evaluation, step: Step): Evaluation {
    this.events.failModes(evaluation.failed, step.ctx);
    return evaluation;
  }

  /** evaluate() of a step with lists, or whose items awaited something or failed to resolve. */
  private async evaluateSlowly(step: Step, resolving?: ReturnType<RequestResolver['resolve']>): Promise<Evaluation> {
    const { ctx, adapter, plan, before } = step;
    try {
      let entries = step.entries;
      if (plan.lists) {
        const left = await this.screen(step);
        if (left === undefined) return ALLOWED;
        entries = left;
      }
      let resolved = resolving ?? this.resolver.resolve(entries, ctx, adapter, plan.where);
      if (isPromise(resolved)) resolved = await resolved;
      const { items, failures } = resolved;
      if (failures !== undefined) this.events.failModes(await this.engine.failed(failures, before), ctx);
      const evaluation = await this.engine.decide(items, before);
      this.events.failModes(evaluation.failed, ctx);
      return evaluation;
    } catch (error) {
      return this.outage(error, step);
    }
  }

  /** The engine's decision of a step, its fail modes told; an outage of a fail-closed policy refuses here. */
  private async decided(deciding: Promise<Evaluation>, step: Step): Promise<Evaluation> {
    try {
      return this.told(await deciding, step);
    } catch (error) {
      return this.outage(error, step);
    }
  }

  /** A fail-closed policy's store failed (StoreUnavailable): the context's refusal; any other error goes on. */
  outage(error: unknown, step: Step): never {
    if (!(error instanceof StoreUnavailable)) throw error;
    const { ctx, adapter } = step;
    const { retryAfter, retryAfterMs } = chosenWait({ unavailable: error.policy, retryAfterMs: error.retryAfterMs });
    this.events.failModes(error.failed, ctx, retryAfterMs);
    adapter.setHeaders(ctx, [['Retry-After', String(retryAfter)]]);
    return adapter.unavailable(ctx, {
      code: 'RATE_LIMIT_UNAVAILABLE',
      message: unavailableMessage(error.policy),
      policy: error.policy,
      retryAfter,
    });
  }

  /**
   * The policies of `entries` left once the lists have spoken, or undefined when the module's allow list lets
   * the invocation through. A deny list forbids (403 and its equivalents) after giving back what `before`
   * consumed; failing list functions are reported, and a fail-closed policy's throws StoreUnavailable.
   */
  private async screen(step: Step): Promise<readonly PlanEntry[] | undefined> {
    const { ctx, adapter, plan, entries, before, first } = step;
    const screening = await screen(ctx, {
      entries,
      module: first ? this.lists : undefined,
      scope: plan.policies,
      denyOnly: before === ALLOWED,
      address: () => adapter.clientAddress(ctx),
    });
    for (const { item, error } of screening.reported ?? []) this.engine.reporter.report(error, [item.policy.name]);
    if (screening.outcome === 'deny') {
      await this.engine.compensate(before);
      adapter.forbid(ctx, {
        code: 'RATE_LIMIT_DENY_LIST',
        message: denyListMessage(screening.policy),
        policy: screening.policy,
      });
    }
    if (screening.failures !== undefined) {
      this.events.failModes(await this.engine.failed(screening.failures, before), ctx);
    }
    return screening.outcome === 'allow' ? undefined : screening.entries;
  }
}
