import type { ExecutionContext } from '@nestjs/common';

import type { Evaluation } from '../engine/decision-engine.js';
import type { SheddingTicket } from '../shedding/load-shedder.js';
import { handlerLabel } from '../util/handler-label.js';

/** Who asks for a decision: an explicit guard decides now; the global guard may defer to the interceptor. */
export type DecisionPoint = 'guard' | 'global-guard' | 'interceptor';

/** What decides invocations: the module's RateLimiter. */
export interface Decider {
  handle(ctx: ExecutionContext, point: DecisionPoint): Promise<void>;
}

/** What waits for an invocation's outcome (lib/limiter/outcome.ts): told how the handler's result settled. */
export interface OutcomeWatch {
  /** The handler threw, its promise rejected or its Observable errored. */
  threw(error: unknown): void;
  /** The handler's result completed. */
  completed(): void;
  /** The result was unsubscribed from before it settled. */
  abandoned(): void;
}

/** What settles an invocation's charge (lib/limiter/settlement.ts): told what its handler's result did. */
export interface SettlementWatch {
  /** The result completed; `last` holds the last value it gave (none: an Observable that emitted nothing). */
  completed(last: { readonly value: unknown } | undefined): void;
  /** The handler threw, its promise rejected or its Observable errored. */
  threw(): void;
  /**
   * The result was unsubscribed from before it settled (a stream whose client went away); `emitted`: whether
   * it gave a value.
   */
  abandoned(emitted: boolean): void;
}

/**
 * Where the module stands with an invocation:
 * - `new`: nothing decided (no guard of the module has seen it, or none has decided yet);
 * - `deferred`: the global guard charged every policy but the user-keyed ones, which the interceptor decides
 *   after the route's own guards have authenticated (and only it: a guard that meets it leaves it there);
 * - `decided`: every policy is decided, allowed or denied (or the handler has none): nothing more is charged.
 */
export type InvocationState = 'new' | 'deferred' | 'decided';

/** The one mark the module leaves on an invocation object. */
const RECORD = Symbol('nest-rate-limit:invocation');

/** An invocation object, as the module marks it. */
interface Carrier {
  [RECORD]?: Invocation;
}

/**
 * The invocation object of a context before its adapter is known: the request for HTTP, the arguments of
 * the call for the others (one array per resolver invocation, message or event, shared by its guards and
 * interceptors). Adapters return the same objects (ContextAdapter.invocation). (The request is the first
 * argument: what `switchToHttp().getRequest()` returns, without the functions switchToHttp() makes on every
 * call.)
 */
export const invocationOf = (ctx: ExecutionContext): object =>
  ctx.getType() === 'http' ? ctx.getArgByIndex<object>(0) : (ctx.getArgs() as object);

/**
 * A transition the module's own code must never make: a bug of nest-rate-limit, thrown rather than let an
 * invocation through unlimited or charge it twice.
 */
export class InvocationStateError extends Error {
  override readonly name = 'InvocationStateError';
}

/**
 * One invocation as the limiter sees it (an HTTP request, a resolver invocation, a message): its state, what
 * the global guard decided before authentication and the limiter that must complete it, and the watches of
 * its charges (outcome and settlement). Kept on the invocation object under one private symbol; guards,
 * interceptors and the exception filter reach it through `of`/`find` and change it only through its methods,
 * each of which throws on a transition its state does not allow.
 *
 * The reservation scope of RateLimitService.reserve() (service/reservation-scopes.ts) is not kept here: it
 * belongs to the HTTP request, not to one invocation. The server's 'request' listener makes it on Node's
 * request before Nest makes any ExecutionContext, the response's close ends it, and middleware and every
 * resolver of a GraphQL operation share it; service/ also imports nothing of limiter/.
 */
export class Invocation {
  private current: InvocationState = 'new';
  /** While deferred: the limiter that deferred it, for the shared interceptor to complete it with. */
  private limiter: Decider | undefined;
  /** While deferred: what the global guard decided before authentication. */
  private early: Evaluation | undefined;
  private outcome: OutcomeWatch | undefined;
  private settlement: SettlementWatch | undefined;
  /** With load shedding on HTTP: the slot the guard admitted it to, given back at the response's end. */
  private slot: SheddingTicket | undefined;
  /** With load shedding outside HTTP: what it was charged, given back if the shedding interceptor refuses it. */
  private charged: Evaluation[] | undefined;

  private constructor(private readonly ctx: ExecutionContext) {}

  /** The record of the invocation `carrier` stands for (ContextAdapter.invocation), made on the first call. */
  static of(carrier: object, ctx: ExecutionContext): Invocation {
    const marked = carrier as Carrier;
    return (marked[RECORD] ??= new Invocation(ctx));
  }

  /** The record of `carrier`, when some decision of the module has made one (the interceptors' fast path). */
  static find(carrier: object): Invocation | undefined {
    return (carrier as Carrier)[RECORD];
  }

  get state(): InvocationState {
    return this.current;
  }

  isDecided(): boolean {
    return this.current === 'decided';
  }

  /** The limiter that deferred this invocation and must complete it, while it is deferred. */
  deferredTo(): Decider | undefined {
    return this.limiter;
  }

  /** new → decided: every policy is decided at once (or there is none). Decided already: it would be charged twice. */
  decide(): void {
    this.expect('new', 'decide()', 'an invocation is decided, and charged, once');
    this.current = 'decided';
  }

  /**
   * new → deferred: `early` (every policy but the user-keyed ones) allowed it; `limiter` decides the rest after
   * the route's guards (decideLate).
   */
  defer(limiter: Decider, early: Evaluation): void {
    this.expect('new', 'defer()', 'only an undecided invocation can be deferred');
    this.current = 'deferred';
    this.limiter = limiter;
    this.early = early;
  }

  /** deferred → decided: returns what the global guard decided, for the late part to complete. */
  decideLate(): Evaluation {
    this.expect('deferred', 'decideLate()', 'only a deferred invocation has a late part');
    const early = this.early as Evaluation;
    this.current = 'decided';
    this.limiter = undefined;
    this.early = undefined;
    return early;
  }

  /** The slot load shedding admitted it to (HTTP), if it did. */
  sheddingSlot(): SheddingTicket | undefined {
    return this.slot;
  }

  /** Load shedding admitted it (HTTP: once, before any policy is decided). */
  admitted(slot: SheddingTicket): void {
    this.expect('new', 'admitted()', 'load shedding admits an invocation before any of its policies is decided');
    if (this.slot !== undefined) this.refuse('admitted()', 'it was admitted already');
    this.slot = slot;
  }

  /** Notes an evaluation of its policies, for load shedding to give back if it refuses the invocation later. */
  noteCharge(evaluation: Evaluation): void {
    (this.charged ??= []).push(evaluation);
  }

  /** The evaluations noted by noteCharge(), each once: the caller gives them back. */
  takeCharges(): readonly Evaluation[] {
    const charged = this.charged ?? [];
    this.charged = undefined;
    return charged;
  }

  /** The outcome watch of the invocation's charges, once its first charge under `count` policies started it. */
  outcomeWatch(): OutcomeWatch | undefined {
    return this.outcome;
  }

  /** Starts watching the outcome of a charge: the invocation must have been charged, and watched by no other. */
  watchOutcome(watch: OutcomeWatch): void {
    this.expectCharged('watchOutcome()');
    if (this.outcome !== undefined) this.refuse('watchOutcome()', 'its outcome is watched already');
    this.outcome = watch;
  }

  /** The settlement of the invocation's `settle` charges, once its first such charge started it. */
  settlementWatch(): SettlementWatch | undefined {
    return this.settlement;
  }

  /** Starts the settlement of a charge: the invocation must have been charged, and settled by no other. */
  settleWith(watch: SettlementWatch): void {
    this.expectCharged('settleWith()');
    if (this.settlement !== undefined) this.refuse('settleWith()', 'it has a settlement already');
    this.settlement = watch;
  }

  private expect(state: InvocationState, operation: string, rule: string): void {
    if (this.current !== state) this.refuse(operation, rule);
  }

  private expectCharged(operation: string): void {
    if (this.current === 'new') this.refuse(operation, 'nothing of it has been charged');
  }

  private refuse(operation: string, rule: string): never {
    const where = handlerLabel(this.ctx.getClass(), this.ctx.getHandler());
    throw new InvocationStateError(
      `nest-rate-limit: ${operation} on an invocation of ${where} that is ${this.current}: ${rule} ` +
        '(a bug of nest-rate-limit; please report it)',
    );
  }
}
