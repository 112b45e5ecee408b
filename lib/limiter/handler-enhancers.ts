import {
  type ArgumentsHost,
  type CanActivate,
  Catch,
  type ExceptionFilter,
  type NestInterceptor,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { EMPTY, from, switchMap, tap } from 'rxjs';

import { RateLimitDroppedEvent } from '../contexts/context-adapter.js';
import type { GuardedHandler } from '../planning/route-plan.js';
import { type Decider, Invocation, invocationOf } from './invocation.js';
import type { SheddingGate } from './shedding-gate.js';

/**
 * The interceptor the limiter attaches to handlers whose user-keyed policies wait for their own guards. One
 * object for every application of the process (classes, and so their metadata, are shared): it completes
 * an invocation with the limiter that deferred it, and passes every other one straight on.
 */
const DEFERRED_DECISIONS: NestInterceptor = {
  intercept(ctx, next) {
    const limiter = Invocation.find(invocationOf(ctx))?.deferredTo();
    if (limiter === undefined) return next.handle();
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
    const carrier = invocationOf(ctx);
    const watch = () => Invocation.find(carrier)?.outcomeWatch();
    return next.handle().pipe(
      tap({
        error: (error: unknown) => watch()?.threw(error),
        complete: () => watch()?.completed(),
        unsubscribe: () => watch()?.abandoned(),
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
    const carrier = invocationOf(ctx);
    const watch = () => Invocation.find(carrier)?.settlementWatch();
    let last: { value: unknown } | undefined;
    return next.handle().pipe(
      tap({
        next: (value: unknown) => (last = { value }),
        error: () => watch()?.threw(),
        complete: () => watch()?.completed(last),
        unsubscribe: () => watch()?.abandoned(last !== undefined),
      }),
    );
  },
};

/**
 * The load shedding of the application that last planned a class outside HTTP, while it runs (classes, and so
 * their interceptors, are shared by the applications of a process; one planned later without `shedding`, or
 * closed, takes it off).
 */
const SHEDDING_GATES = new WeakMap<object, SheddingGate>();

/**
 * The interceptor the limiter attaches to handlers outside HTTP (microservice handlers, gateway messages, root
 * resolvers): load shedding admits their invocations after every guard, in flight until their result settles.
 * It passes everything straight on for an application without the `shedding` option.
 */
const SHEDDING: NestInterceptor = {
  intercept(ctx, next) {
    const gate = SHEDDING_GATES.get(ctx.getClass());
    return gate === undefined ? next.handle() : gate.intercept(ctx, next);
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
const withShedding: HandlerDecorator = (owner, method, descriptor) => {
  UseInterceptors(SHEDDING)(owner, method, descriptor);
  // A shed event of a handler without policies: no handler guard brought the filter (a hybrid app without
  // inheritAppConfig has no APP_FILTER), and Nest's would log an error for every dropped event.
  UseFilters(new DroppedEventFilter())(owner, method, descriptor);
};
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
 * Whether the deferral interceptor is on `handler` (ctx.getHandler()): the global guard leaves a decision only
 * to an interceptor that will make it.
 */
export const completesDeferrals = (handler: object): boolean =>
  decorated.get(withDeferredDecisions)?.has(handler) === true;

/**
 * Puts the outcome interceptor on the handlers with `count` policies, whoever decides them (the global guard,
 * or your RateLimitGuard or RateLimitInterceptor with `global: false`). Handlers without such policies pay
 * for nothing.
 */
export function attachOutcomeObserver(counted: readonly { prototype: object; method: string }[]): void {
  for (const { prototype, method } of counted) decorateHandler(prototype, method, withOutcomeObserver);
}

/**
 * With the `shedding` option (`gate`), puts the shedding interceptor on the handlers outside HTTP; without it,
 * an application planned later in the process leaves the interceptor on them passing everything on.
 */
export function attachShedding(
  gate: SheddingGate | undefined,
  outsideHttp: readonly { classRef: object; prototype: object; method: string }[],
): void {
  for (const { classRef, prototype, method } of outsideHttp) {
    if (gate === undefined) {
      SHEDDING_GATES.delete(classRef);
      continue;
    }
    SHEDDING_GATES.set(classRef, gate);
    decorateHandler(prototype, method, withShedding);
  }
}

/** An application that closes takes its load shedding off the classes it had it on. */
export function detachShedding(gate: SheddingGate | undefined, outsideHttp: readonly { classRef: object }[]): void {
  if (gate === undefined) return;
  for (const { classRef } of outsideHttp) if (SHEDDING_GATES.get(classRef) === gate) SHEDDING_GATES.delete(classRef);
}

/** Puts the settlement interceptor on the handlers with `settle` policies; others pay for nothing. */
export function attachSettlement(settled: readonly { prototype: object; method: string }[]): void {
  for (const { prototype, method } of settled) decorateHandler(prototype, method, withSettlement);
}
