import type { ExecutionContext } from '@nestjs/common';

import { unitsStillHeld } from '../algorithms/still-held.js';
import type { ContextAdapter } from '../contexts/context-adapter.js';
import { elementAt } from '../util/element-at.js';
import { type DecisionEngine, type EngineItem, type Evaluation, sourceAt } from '../engine/decision-engine.js';
import type { Invocation, OutcomeWatch } from './invocation.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { OutcomeRule } from '../planning/route-plan.js';
import type { RateLimitOutcome } from '../policy/policy.types.js';
import type { RateLimitStore } from '../stores/rate-limit-store.js';
import { handlerLabel } from '../util/handler-label.js';

/** What one decision of an invocation charged, and when (the engine's clock). */
interface Charge {
  readonly evaluation: Evaluation;
  readonly atMs: number;
}

/** An item to give back, and the store that decided it. */
interface Refund {
  readonly item: EngineItem;
  readonly store: RateLimitStore;
}

/** An invocation succeeded: no exception and, on HTTP, a status below 400. */
export function succeeded(outcome: RateLimitOutcome): boolean {
  return !('error' in outcome) && (outcome.status === undefined || outcome.status < 400);
}

/**
 * Whether an outcome counts under a rule: true keeps the charge, false refunds it. Throws what a count
 * function threw, or a TypeError when it returned something other than a boolean.
 */
export function counts(rule: OutcomeRule, outcome: RateLimitOutcome): boolean {
  if (rule === 'release') return false;
  if (rule === 'failed') return !succeeded(outcome);
  if (rule === 'succeeded') return succeeded(outcome);
  const verdict: unknown = rule(outcome);
  if (typeof verdict === 'boolean') return verdict;
  throw new TypeError(
    `returned ${verdict === null ? 'null' : typeof verdict}; it must return true (count) or false (refund)`,
  );
}

/** `Class.method` of an invocation, for errors. */
const whereOf = (ctx: ExecutionContext): string => handlerLabel(ctx.getClass(), ctx.getHandler());

/**
 * Counting by outcome: every invocation is charged when it is decided (all-or-nothing, so concurrent ones
 * cannot slip through); once its outcome is known, the items whose `count` does not count it are given back,
 * in one store call per store, as far as the key still holds them (unitsStillHeld: what a bucket refilled since
 * may be another request's). An outcome that is not seen (the client left before its HTTP response was
 * ended; outside HTTP, a handler never reached or never settled) keeps every charge. Refunds never throw:
 * a count function that throws, or a refund that fails, keeps the charge and is reported.
 */
export class OutcomeRefunds {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly engine: DecisionEngine) {}

  /** Resolves once the refunds under way are done (each is bounded by the store's timeout). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  /**
   * Watches an allowed decision of an invocation until the invocation ends, when some of its items count by
   * outcome. The first such decision of an invocation starts the watch (and, on HTTP, listens for the end of
   * the response); a later one (user-keyed policies decided after the route's guards) joins it.
   */
  track(ctx: ExecutionContext, adapter: ContextAdapter, invocation: Invocation, evaluation: Evaluation): void {
    if (!evaluation.items.some((item) => item.count !== undefined)) return;
    let watch = invocation.outcomeWatch() as PendingOutcome | undefined;
    if (watch === undefined) {
      const endsOnItsOwn = adapter.watchEnd !== undefined;
      const pending = new PendingOutcome(this, ctx, endsOnItsOwn);
      watch = pending;
      invocation.watchOutcome(pending);
      if (endsOnItsOwn) adapter.watchEnd?.(ctx, (status) => pending.ended(status));
    }
    watch.add({ evaluation, atMs: this.engine.now() });
  }

  /**
   * Gives back what `outcome` does not count (nothing when it is undefined: not seen). Judges at once (count
   * functions run here, synchronously); the store call goes on in the background and never rejects.
   */
  settle(charges: readonly Charge[], outcome: RateLimitOutcome | undefined): void {
    const nowMs = this.engine.now();
    const refunds: Refund[] = [];
    const released: EngineItem[] = [];
    for (const { evaluation, atMs } of charges) {
      // Given back already: a later step of the same invocation denied, or its store failed closed.
      if (evaluation.compensated === true) continue;
      const { items, decisions } = evaluation;
      for (let i = 0; i < items.length; i++) {
        const item = items[i] as EngineItem;
        // A shadow item that would have denied consumed nothing.
        if (item.count === undefined || item.cost === 0) continue;
        const decision = elementAt(decisions, i, 'the decisions of an evaluation');
        if (!decision.allowed) continue;
        // An outcome not seen keeps every charge but the concurrency slots.
        if (outcome === undefined ? item.count !== 'release' : this.keeps(item, item.count, outcome)) continue;
        // A concurrency slot ends with its invocation, whether it is given back or has expired.
        if (item.count === 'release') released.push(item);
        const back = unitsStillHeld(item.policy, item.cost, atMs, nowMs, decision.resetMs);
        if (back === 0) continue;
        // On the store that decided it: the local one for a decision made there while the store failed.
        const store = this.engine.storeOf(item.policy, sourceAt(evaluation, i));
        refunds.push({ item: back === item.cost ? item : { ...item, cost: back }, store });
      }
    }
    this.engine.released(released);
    if (refunds.length === 0) return;
    const refunding = this.refund(refunds).finally(() => this.inFlight.delete(refunding));
    this.inFlight.add(refunding);
  }

  /** Whether the charge of `item` stays; a count function that fails keeps it, and is reported. */
  private keeps(item: EngineItem, rule: OutcomeRule, outcome: RateLimitOutcome): boolean {
    try {
      return counts(rule, outcome);
    } catch (error) {
      const problem = error instanceof Error ? error.message : String(error);
      const policy = item.policy.name;
      this.engine.reporter.report(
        new RateLimitPolicyError(`the count function failed, so the charge is kept: ${problem}`, {
          policy,
          field: 'count',
          where: whereOf(outcome.context),
        }),
        [policy],
      );
      return true;
    }
  }

  /**
   * One refund call per store (the quotas' store is another with the `postgres` option beside Redis). Units
   * given back lift the cached denials of those keys, here and (through the store's feed of changes) in the
   * other instances. A refund that fails leaves the charge, reported.
   */
  private refund(refunds: readonly Refund[]): Promise<void> {
    const first = elementAt(refunds, 0, 'the refunds of an outcome').store;
    // Mostly one store: no grouping then (this runs at the end of every counted request).
    if (refunds.every(({ store }) => store === first)) {
      return this.refundOn(
        first,
        refunds.map(({ item }) => item),
      );
    }
    const byStore = new Map<RateLimitStore, EngineItem[]>();
    for (const { item, store } of refunds) {
      const part = byStore.get(store);
      if (part === undefined) byStore.set(store, [item]);
      else part.push(item);
    }
    return Promise.all([...byStore].map(([store, part]) => this.refundOn(store, part))).then(() => undefined);
  }

  /** The refund call of one store; never rejects. */
  private async refundOn(store: RateLimitStore, part: readonly EngineItem[]): Promise<void> {
    try {
      await this.engine.run(store, 'refund', () => store.refund(part));
      if (store === this.engine.store) void this.engine.feed.changed(part);
    } catch (error) {
      this.engine.reporter.report(
        error,
        part.map((item) => item.policy.name),
      );
    }
  }
}

/**
 * The outcome watch of one invocation: the charges of its decisions, what its handler threw, and the end.
 * HTTP ends with the response (the status, whoever wrote it; the handler's error is kept for the outcome);
 * other contexts end with the handler's result: an error is a failure, completion a success, an
 * unsubscription before either an outcome not seen.
 */
class PendingOutcome implements OutcomeWatch {
  private readonly charges: Charge[] = [];
  private thrown: { readonly error: unknown } | undefined;
  private done = false;

  constructor(
    private readonly refunds: OutcomeRefunds,
    private readonly ctx: ExecutionContext,
    private readonly endsOnItsOwn: boolean,
  ) {}

  add(charge: Charge): void {
    this.charges.push(charge);
  }

  threw(error: unknown): void {
    this.thrown = { error };
    if (!this.endsOnItsOwn) this.end(this.outcome(undefined));
  }

  completed(): void {
    if (!this.endsOnItsOwn) this.end(this.outcome(undefined));
  }

  abandoned(): void {
    if (!this.endsOnItsOwn) this.end(undefined);
  }

  /** The end of an HTTP response: its status, or undefined when the client left before it was ended. */
  ended(status: number | undefined): void {
    this.end(status === undefined ? undefined : this.outcome(status));
  }

  private outcome(status: number | undefined): RateLimitOutcome {
    const outcome: { status?: number; error?: unknown; context: ExecutionContext } = { context: this.ctx };
    if (status !== undefined) outcome.status = status;
    if (this.thrown !== undefined) outcome.error = this.thrown.error;
    return outcome;
  }

  private end(outcome: RateLimitOutcome | undefined): void {
    if (this.done) return;
    this.done = true;
    this.refunds.settle(this.charges, outcome);
  }
}
