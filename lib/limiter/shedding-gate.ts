import type { CallHandler, ExecutionContext } from '@nestjs/common';
import { defer, finalize, from, type Observable, tap } from 'rxjs';

import type { AdapterRegistry } from '../contexts/adapter-registry.js';
import type { ContextAdapter, ContextType } from '../contexts/context-adapter.js';
import type { DecisionEngine } from '../engine/decision-engine.js';
import type { RoutePlanner } from '../planning/route-planner.js';
import type { RoutePlan } from '../planning/route-plan.js';
import type { Criticality } from '../policy/criticality.js';
import { overloadedMessage } from '../responses/rate-limit-exceptions.js';
import type { LoadShedder, SheddingTicket } from '../shedding/load-shedder.js';
import type { DecisionEvents } from './decision-events.js';
import { Invocation, invocationOf } from './invocation.js';

/**
 * Load shedding on the request path (the `shedding` option), around the rate-limit policies so that a request
 * refused by one is not counted by the other:
 * - HTTP: the guard admits the request before any policy is decided (a shed request is never charged, and
 *   costs no store call), and it stays in flight until its response ends; a request a policy refuses gives
 *   its slot back at once, without teaching the limit its latency.
 * - Outside HTTP (microservices, gateways, root resolvers), whose invocations end with the handler's result:
 *   an interceptor of the limiter's admits the invocation after every guard, and gives back everything the
 *   policies charged it when it refuses it (their outcome and settlement watches then skip it: compensated).
 */
export class SheddingGate {
  constructor(
    readonly shedder: LoadShedder,
    private readonly events: DecisionEvents,
    private readonly engine: DecisionEngine,
    private readonly planner: RoutePlanner,
    private readonly adapters: AdapterRegistry,
  ) {}

  /** An HTTP request at its first decision point: admitted until its response ends, or refused (throws the 503). */
  admitHttp(ctx: ExecutionContext, adapter: ContextAdapter, invocation: Invocation, plan: RoutePlan): SheddingTicket {
    const slot = this.shedder.admit(plan.criticality);
    if (slot === undefined) this.refuse(ctx, adapter, plan.criticality);
    invocation.admitted(slot);
    // A client that left before its response (a timeout) still taught the limit: its wait is the strongest signal.
    adapter.watchEnd?.(ctx, () => this.shedder.release(slot, true));
    return slot;
  }

  /** `pending` (the policies' decision) refused the request: its slot goes back at once, without a sample. */
  releaseOnRefusal(pending: Promise<void>, slot: SheddingTicket): Promise<void> {
    return pending.catch((refusal: unknown) => {
      this.shedder.release(slot, false);
      throw refusal;
    });
  }

  /** The shedding interceptor's work outside HTTP: the handler's result runs in flight, or the refusal. */
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    // Admitted on subscription: a slot is taken only where its release (finalize) is sure to run.
    return defer(() => {
      const plan = this.planner.planFor(ctx.getClass(), ctx.getHandler());
      const slot = this.shedder.admit(plan.criticality);
      if (slot === undefined) return from(this.refuseCharged(ctx, plan));
      return next.handle().pipe(
        tap({ complete: () => this.shedder.release(slot, true), error: () => this.shedder.release(slot, true) }),
        finalize(() => this.shedder.release(slot, false)), // unsubscribed before it settled: no sample
      );
    });
  }

  /** Refuses an invocation outside HTTP, after giving back what its policies charged. */
  private async refuseCharged(ctx: ExecutionContext, plan: RoutePlan): Promise<never> {
    const adapter = this.adapters.get(ctx.getType<ContextType>());
    if (adapter === undefined) throw new Error(`nest-rate-limit: no adapter of context ${ctx.getType()} (a bug)`);
    // Every charge, `count` and `settle` policies' too: compensated, their watches skip it (outcome.ts, settlement.ts).
    const charges = Invocation.find(invocationOf(ctx))?.takeCharges() ?? [];
    await Promise.all(charges.map((charge) => this.engine.compensate(charge)));
    return this.refuse(ctx, adapter, plan.criticality);
  }

  private refuse(ctx: ExecutionContext, adapter: ContextAdapter, criticality: Criticality): never {
    const retryAfter = this.shedder.retryAfterSeconds();
    this.events.shed(criticality, retryAfter * 1000, ctx);
    return adapter.overloaded(ctx, {
      code: 'OVERLOADED',
      message: overloadedMessage(criticality),
      criticality,
      retryAfter,
    });
  }
}
