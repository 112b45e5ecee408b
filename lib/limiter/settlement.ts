import type { ExecutionContext } from '@nestjs/common';

import { unitsStillHeld } from '../algorithms/still-held.js';
import type { ContextAdapter } from '../contexts/context-adapter.js';
import { type DecisionEngine, type EngineItem, type Evaluation, sourceAt } from '../engine/decision-engine.js';
import type { ActualCostCap } from '../policy/debt-cap.js';
import { PolicyFunctionError, RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitSettle } from '../policy/policy.types.js';
import { checkCost } from '../policy/value-checks.js';
import type { RateLimitStore } from '../stores/rate-limit-store.js';
import { elementAt } from '../util/element-at.js';
import { handlerLabel } from '../util/handler-label.js';
import type { Invocation, SettlementWatch } from './invocation.js';

/** An item of a decision that a `settle` policy charged at its estimate, with where and when it was charged. */
interface Estimate {
  readonly item: EngineItem;
  readonly settle: RateLimitSettle;
  readonly store: RateLimitStore;
  readonly atMs: number;
  readonly resetMs: number;
  /** The decision it belongs to: given back already when a later step of the invocation denied it. */
  readonly evaluation: Evaluation;
}

/** What one store is sent when an invocation is settled: units given back, and overruns charged. */
interface StoreChanges {
  readonly refunds: EngineItem[];
  readonly charges: EngineItem[];
}

/**
 * Reserve, then settle (RateLimitPolicy.settle): a `settle` policy is charged its `cost`, the estimate, when the
 * invocation is decided, with the route's other policies; once the handler's result has completed, `settle`
 * gives the actual cost from it, and the difference is given back as far as the key still holds it
 * (unitsStillHeld: nothing once the charge's window has passed, a bucket's part that has not refilled), or the
 * overrun charged without deciding (RateLimitStore.charge: the key may go into
 * debt). A handler that throws gets the whole estimate back; a stream abandoned by its client keeps it once it
 * has emitted something (the model was called), and gets it back when it had emitted nothing. Store calls run
 * in the background and never reject: a failure, or a settle function that fails, keeps the estimate and is
 * reported.
 */
export class Settlements {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly engine: DecisionEngine,
    private readonly cap: ActualCostCap,
  ) {}

  /** Resolves once the settlements under way are done (each store call is bounded by the store's timeout). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /**
   * Watches an allowed decision of an invocation that charged `settle` policies, until its handler's result.
   * On HTTP the response's end is watched too: an invocation whose handler never ran (the route's own guards
   * refused it after the global guard charged it) gets its estimate back then.
   */
  track(ctx: ExecutionContext, adapter: ContextAdapter, invocation: Invocation, evaluation: Evaluation): void {
    const atMs = this.engine.now();
    const estimates: Estimate[] = [];
    evaluation.items.forEach((item, i) => {
      const settle = item.policy.source.settle;
      const decision = elementAt(evaluation.decisions, i, 'the decisions of an evaluation');
      // A shadow item consumed nothing; a denied one neither.
      if (settle === undefined || item.shadow === true || !decision.allowed) return;
      const store = this.engine.storeOf(item.policy, sourceAt(evaluation, i));
      estimates.push({ item, settle, store, atMs, resetMs: decision.resetMs, evaluation });
    });
    if (estimates.length === 0) return;
    let watch = invocation.settlementWatch() as PendingSettlement | undefined;
    if (watch === undefined) {
      const pending = new PendingSettlement(this, ctx);
      watch = pending;
      invocation.settleWith(pending);
      // After the handler's own end, which the interceptor reports in the same turn as the response's.
      adapter.watchEnd?.(ctx, () => setImmediate(() => pending.threw()));
    }
    watch.add(estimates);
  }

  /** Settles the estimates at the actual costs `actualOf` gives (undefined: keep the estimate). */
  settle(estimates: readonly Estimate[], actualOf: (estimate: Estimate) => Promise<number | undefined>): void {
    const work = this.apply(estimates, actualOf)
      .catch((error: unknown) =>
        this.engine.reporter.report(
          error,
          estimates.map(({ item }) => item.policy.name),
        ),
      )
      .finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  private async apply(
    estimates: readonly Estimate[],
    actualOf: (estimate: Estimate) => Promise<number | undefined>,
  ): Promise<void> {
    const actuals = await Promise.all(estimates.map(actualOf));
    const nowMs = this.engine.now();
    const byStore = new Map<RateLimitStore, StoreChanges>();
    estimates.forEach((estimate, i) => {
      const { item, store, atMs, resetMs, evaluation } = estimate;
      const actual = actuals[i];
      if (actual === undefined || actual === item.cost || evaluation.compensated === true) return;
      let changes = byStore.get(store);
      if (changes === undefined) byStore.set(store, (changes = { refunds: [], charges: [] }));
      if (actual > item.cost) changes.charges.push({ ...item, cost: actual - item.cost });
      else {
        const back = Math.min(item.cost - actual, unitsStillHeld(item.policy, item.cost, atMs, nowMs, resetMs));
        if (back > 0) changes.refunds.push({ ...item, cost: back });
      }
    });
    await Promise.all([...byStore].map(([store, changes]) => this.send(store, changes)));
  }

  /** The refund and charge calls of one store; never rejects: a failure keeps the estimate, reported. */
  private async send(store: RateLimitStore, { refunds, charges }: StoreChanges): Promise<void> {
    const calls: Promise<unknown>[] = [];
    if (refunds.length > 0) calls.push(this.engine.run(store, 'refund', () => store.refund(refunds)));
    if (charges.length > 0) {
      const charge = store.charge?.bind(store);
      // Checked at start (a `settle` policy needs a store that can charge): a store swapped since is reported.
      if (charge === undefined) calls.push(Promise.reject(cannotCharge(store)));
      else calls.push(this.engine.run(store, 'charge', () => charge(charges)));
    }
    const results = await Promise.allSettled(calls);
    const changed = [...refunds, ...charges];
    if (store === this.engine.store) void this.engine.feed.changed(changed);
    for (const result of results) {
      if (result.status === 'rejected') {
        this.engine.reporter.report(
          result.reason,
          changed.map((item) => item.policy.name),
        );
      }
    }
  }

  /** The actual cost `settle` gives for `result`, checked; a failure keeps the estimate and is reported. */
  async actual(ctx: ExecutionContext, estimate: Estimate, result: unknown): Promise<number | undefined> {
    const policy = estimate.item.policy.name;
    const where = handlerLabel(ctx.getClass(), ctx.getHandler());
    let actual: unknown;
    try {
      actual = await estimate.settle(ctx, result);
    } catch (error) {
      this.engine.reporter.report(new PolicyFunctionError('settle', policy, where, error), [policy], KEPT);
      return undefined;
    }
    try {
      const checked = checkCost(actual, (problem) => {
        throw new TypeError(problem.replace(/^cost/, 'the actual cost'));
      });
      return this.cap.clamp(estimate.item.policy, estimate.item.cost, checked, where);
    } catch (error) {
      this.engine.reporter.report(
        new RateLimitPolicyError(
          `the settle function returned a bad value, so the estimate is kept: ${(error as Error).message}`,
          {
            policy,
            field: 'settle',
            where,
          },
        ),
        [policy],
      );
      return undefined;
    }
  }
}

/** What a settle function that threw does to its charge, in the words of the log. */
const KEPT = 'the estimate is kept';

/** The error of a `settle` policy whose store has no charge(): an overrun could not be charged. */
export function cannotCharge(store: RateLimitStore): TypeError {
  return new TypeError(
    `nest-rate-limit: the store (${store.constructor.name}) cannot charge an overrun: it has no charge()`,
  );
}

/** The settlement of one invocation: its estimates, until its handler's result completes, throws or is left. */
class PendingSettlement implements SettlementWatch {
  private readonly estimates: Estimate[] = [];
  private done = false;

  constructor(
    private readonly settlements: Settlements,
    private readonly ctx: ExecutionContext,
  ) {}

  add(estimates: readonly Estimate[]): void {
    this.estimates.push(...estimates);
  }

  completed(last: { readonly value: unknown } | undefined): void {
    this.end((estimate) => this.settlements.actual(this.ctx, estimate, last?.value));
  }

  /** The handler threw, or (the response ended first) never ran. */
  threw(): void {
    this.end(() => Promise.resolve(0));
  }

  abandoned(emitted: boolean): void {
    this.end(() => Promise.resolve(emitted ? undefined : 0));
  }

  private end(actualOf: (estimate: Estimate) => Promise<number | undefined>): void {
    if (this.done) return;
    this.done = true;
    this.settlements.settle(this.estimates, actualOf);
  }
}
