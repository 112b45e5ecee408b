import {
  type ArgumentsHost,
  type CanActivate,
  Catch,
  type ExceptionFilter,
  type ExecutionContext,
  type NestInterceptor,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { EMPTY, from, switchMap, tap } from 'rxjs';

import { RateLimitDroppedEvent } from '../contexts/context-adapter.js';
import type { Evaluation } from '../engine/decision-engine.js';
import type { GuardedHandler } from '../planning/route-plan.js';

/** Where the module stands with an invocation: decided, or left to the interceptor (after every guard). */
export const STATE = Symbol('nest-rate-limit:state');
/** The limiter that deferred an invocation, for the shared interceptor to complete it with. */
export const LIMITER = Symbol('nest-rate-limit:limiter');
/** What the global guard decided before authentication, for the interceptor to complete. */
export const EARLY = Symbol('nest-rate-limit:early-decisions');
/** The watch of an invocation charged under `count` policies, waiting for its outcome. */
export const OUTCOME = Symbol('nest-rate-limit:outcome');
/** The settlement of an invocation charged under `settle` policies, waiting for its handler's result. */
export const SETTLEMENT = Symbol('nest-rate-limit:settlement');
export const DECIDED = 1;
export const DEFERRED = 2;

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

/** The limiter's marks on an invocation object. */
export interface Invocation {
  [STATE]?: number;
  [LIMITER]?: Decider;
  [EARLY]?: Evaluation;
  [OUTCOME]?: OutcomeWatch;
  [SETTLEMENT]?: SettlementWatch;
}

/**
 * The invocation object of a context before its adapter is known: the request for HTTP, the arguments of
 * the call for the others (one array per resolver invocation, message or event, shared by its guards and
 * interceptors). Adapters return the same objects. (The request is the first argument: what
 * `switchToHttp().getRequest()` returns, without the functions switchToHttp() makes on every call.)
 */
export const invocationOf = (ctx: ExecutionContext): Invocation =>
  ctx.getType() === 'http' ? ctx.getArgByIndex<Invocation>(0) : (ctx.getArgs() as Invocation);

/**
 * The interceptor the limiter attaches to handlers whose user-keyed policies wait for their own guards. One
 * object for every application of the process (classes, and so their metadata, are shared): it completes
 * an invocation with the limiter that deferred it, and passes every other one straight on.
 */
const DEFERRED_DECISIONS: NestInterceptor = {
  intercept(ctx, next) {
    const invocation = invocationOf(ctx);
    const limiter = invocation[LIMITER];
    if (invocation[STATE] !== DEFERRED || limiter === undefined) return next.handle();
    return from(limiter.handle(ctx, 'interceptor')).pipe(switchMap(() => next.handle()));
  },
};

/**
 * The interceptor the limiter attaches to handlers with `count` policies: tells the invocation's outcome
 * watch, when the invocation was charged, how the handler's result settled. The watch is looked up then, not
 * before: a decision of an interceptor inside this one (the deferral's) may start it.
 */
const OUTCOME_OBSERVER: NestInterceptor = {
  intercept(ctx, next) {
    const invocation = invocationOf(ctx);
    return next.handle().pipe(
      tap({
        error: (error: unknown) => invocation[OUTCOME]?.threw(error),
        complete: () => invocation[OUTCOME]?.completed(),
        unsubscribe: () => invocation[OUTCOME]?.abandoned(),
      }),
    );
  },
};

/**
 * The interceptor the limiter attaches to handlers with `settle` policies: gives the invocation's settlement,
 * when it was charged, the last value of the handler's result (its value, or an Observable's last one) once
 * it completes, or says that it threw or was abandoned. The settlement is looked up then, as the outcome's.
 */
const SETTLEMENT_OBSERVER: NestInterceptor = {
  intercept(ctx, next) {
    const invocation = invocationOf(ctx);
    let last: { value: unknown } | undefined;
    return next.handle().pipe(
      tap({
        next: (value: unknown) => (last = { value }),
        error: () => invocation[SETTLEMENT]?.threw(),
        complete: () => invocation[SETTLEMENT]?.completed(last),
        unsubscribe: () => invocation[SETTLEMENT]?.abandoned(last !== undefined),
      }),
    );
  },
};

/** The limiter of the application that last planned a microservice controller or gateway class. */
const HANDLER_LIMITERS = new WeakMap<object, Decider>();

/**
 * The guard the limiter puts on microservice and gateway handlers with policies, where the application's
 * global guard may not run:
 * - a hybrid app's microservice gets the global guard only with `connectMicroservice(options, {
 *   inheritAppConfig: true })`;
 * - gateways get no global guard before @nestjs/websockets 12 (its socket module builds their guards without
 *   the application's configuration).
 * The same holds for a RateLimitGuard that the application makes global itself (`global: false` and an
 * APP_GUARD). Without it those handlers would go unlimited, silently. Where the global guard runs, it has decided first
 * (or deferred to the interceptor), and this one finds the invocation decided. It runs after the class's and
 * the handler's own guards, so a user they authenticate is known.
 */
const HANDLER_GUARD: CanActivate = {
  async canActivate(ctx) {
    await HANDLER_LIMITERS.get(ctx.getClass())?.handle(ctx, 'guard');
    return true;
  },
};

/** Turns a microservice event the limiter dropped into an empty result, for handlers without the APP_FILTER. */
@Catch(RateLimitDroppedEvent)
class DroppedEventFilter implements ExceptionFilter {
  catch(exception: RateLimitDroppedEvent, host: ArgumentsHost): unknown {
    if (host.getType() === 'rpc') return EMPTY;
    throw exception;
  }
}

type HandlerDecorator = (owner: object, method: string, descriptor: PropertyDescriptor) => void;
const decorated = new Map<HandlerDecorator, WeakSet<object>>();

/** Applies one of Nest's own decorators to a handler (once per process), before Nest reads its metadata. */
function decorateHandler(prototype: object, method: string, decorate: HandlerDecorator): void {
  let owner: object | null = prototype;
  let descriptor: PropertyDescriptor | undefined;
  while (owner !== null && (descriptor = Object.getOwnPropertyDescriptor(owner, method)) === undefined) {
    owner = Object.getPrototypeOf(owner) as object | null;
  }
  const handler: unknown = descriptor?.value;
  if (owner === null || descriptor === undefined || typeof handler !== 'function') return;
  let done = decorated.get(decorate);
  if (done === undefined) decorated.set(decorate, (done = new WeakSet()));
  if (done.has(handler)) return;
  done.add(handler);
  decorate(owner, method, descriptor);
}

const withDeferredDecisions: HandlerDecorator = (owner, method, descriptor) =>
  UseInterceptors(DEFERRED_DECISIONS)(owner, method, descriptor);
const withOutcomeObserver: HandlerDecorator = (owner, method, descriptor) =>
  UseInterceptors(OUTCOME_OBSERVER)(owner, method, descriptor);
const withSettlement: HandlerDecorator = (owner, method, descriptor) =>
  UseInterceptors(SETTLEMENT_OBSERVER)(owner, method, descriptor);
const withRpcGuard: HandlerDecorator = (owner, method, descriptor) => {
  UseGuards(HANDLER_GUARD)(owner, method, descriptor);
  UseFilters(new DroppedEventFilter())(owner, method, descriptor);
};
const withGatewayGuard: HandlerDecorator = (owner, method, descriptor) =>
  UseGuards(HANDLER_GUARD)(owner, method, descriptor);

/**
 * Puts the limiter's enhancers on the handlers that need them, with Nest's own decorators, while Nest
 * instantiates providers (before it reads handlers' enhancers to build routes, resolvers, gateways and
 * message handlers): the deferral interceptor where user-keyed policies wait for a route's own guards, and
 * the guard on microservice and gateway handlers. Other handlers pay for nothing.
 */
export function attachEnhancers(
  limiter: Decider,
  deferred: readonly { prototype: object; method: string }[],
  guarded: readonly GuardedHandler[],
): void {
  for (const { prototype, method } of deferred) decorateHandler(prototype, method, withDeferredDecisions);
  for (const { context, classRef, prototype, method } of guarded) {
    HANDLER_LIMITERS.set(classRef, limiter);
    decorateHandler(prototype, method, context === 'rpc' ? withRpcGuard : withGatewayGuard);
  }
}

/**
 * Puts the outcome interceptor on the handlers with `count` policies, whoever decides them (the global guard,
 * or your RateLimitGuard or RateLimitInterceptor with `global: false`). Handlers without such policies pay
 * for nothing.
 */
export function attachOutcomeObserver(counted: readonly { prototype: object; method: string }[]): void {
  for (const { prototype, method } of counted) decorateHandler(prototype, method, withOutcomeObserver);
}

/** Puts the settlement interceptor on the handlers with `settle` policies; others pay for nothing. */
export function attachSettlement(settled: readonly { prototype: object; method: string }[]): void {
  for (const { prototype, method } of settled) decorateHandler(prototype, method, withSettlement);
}
