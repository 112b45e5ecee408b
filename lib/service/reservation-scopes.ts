import { AsyncLocalStorage } from 'node:async_hooks';
import type { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';

import type { ExecutionContext } from '@nestjs/common';

import { handlerLabel } from '../util/handler-label.js';
import type { Logger } from '../util/logger.js';
import { monotonicNow, ThrottledLog } from '../util/throttled-log.js';
import type { Reservation } from './reservation.js';

/** How long one handler's leaked reservations of the same policies stay quiet in the log after a report. */
const QUIET_MS = 60_000;
/** Handler and policy sets whose held-back estimates are summed at once (as ThrottledLog remembers them). */
const MAX_REASONS = 1000;

/** The request's scope, kept on its request object: every guard of one request enters the same scope. */
const SCOPE = Symbol('nest-rate-limit:reservation-scope');

/** A request object that may carry a scope: Node's, or a Fastify request wrapping Node's as `raw`. */
interface ScopedRequest {
  [SCOPE]?: Scope;
  raw?: ScopedRequest;
}

/** The HTTP server's 'request' listener, as the scopes put it first. */
type RequestListener = (req: ScopedRequest, res: ServerResponse) => void;

/** The reservations made while one HTTP request was being handled, until its response closes. */
interface Scope {
  /**
   * The request's handler, named `Class.method` in the log (only when something leaked: labels cost); set by
   * the first of the module's guards the request meets, for what its middleware reserved too (none: a request
   * no guard of the module saw, such as GraphQL's, whose guards run in another context).
   */
  classRef: unknown;
  handler: unknown;
  /** Made on the first reservation: most requests make none. */
  reservations: Set<Reservation> | undefined;
  /** Its response has closed: code that still runs in it (a timer the handler left) reserves untracked. */
  ended: boolean;
  /** Entered by the server's listener, so everything the request runs has it: the guards need not enter it. */
  entered: boolean;
}

/**
 * Settles at its estimate, and reports once in the log, each reservation (RateLimitService.reserve) that its
 * HTTP request left neither settled nor cancelled when its response closed. Free until used: nothing is
 * tracked, and nothing is done per request, until the first reserve() turns tracking on (that first
 * reservation is not tracked). From then on each request the application's HTTP server receives gets a scope
 * (AsyncLocalStorage.enterWith, in a 'request' listener put before the app's own), which everything the app
 * runs for it inherits: middleware, every guard (awaiting or not), pipes, interceptors, the handler and a
 * GraphQL resolver. The module's guards and interceptor name the scope's handler, and enter it themselves
 * where no listener could be put (no HTTP server at hand: a server the app made itself); there, entered
 * synchronously at the start of canActivate, it reaches the handler only while no guard before them has
 * awaited. A reservation made where no open scope is seen is not tracked.
 */
export class ReservationScopes {
  private storage: AsyncLocalStorage<Scope> | undefined;
  private readonly log: ThrottledLog;
  /** Per reason, the estimates of the reports the log held back, summed by policy, for its next line. */
  private readonly held = new Map<string, Map<string, number>>();

  /** The HTTP server the scopes listen to, and their listener, once tracking is on. */
  private listening: { server: EventEmitter; listener: RequestListener } | undefined;

  /**
   * @param httpServer the application's HTTP server (Node's, or an HTTP/2 one), or undefined when it has none.
   * @param now the monotonic time the log is throttled by (a test drives it).
   */
  constructor(
    private readonly logger: Logger,
    private readonly httpServer: () => unknown = () => undefined,
    now: () => number = monotonicNow,
  ) {
    this.log = new ThrottledLog(QUIET_MS, now, MAX_REASONS);
  }

  /** A reservation just made: the first one turns tracking on; later ones join the open scope they run in. */
  track(reservation: Reservation): void {
    if (this.storage === undefined) {
      this.storage = new AsyncLocalStorage();
      this.listen();
      return;
    }
    const scope = this.storage.getStore();
    if (scope === undefined || scope.ended || reservation.done) return;
    (scope.reservations ??= new Set()).add(reservation);
  }

  /**
   * Names the handler of the request of `ctx` (HTTP only) on its scope, and enters the scope, once tracking is
   * on. Call it synchronously, before any await of the caller: where the server's listener made no scope, the
   * store is set on the current execution, which Nest's router continues to the handler.
   */
  enter(ctx: ExecutionContext): void {
    if (this.storage === undefined || ctx.getType() !== 'http') return;
    const req = ctx.getArgByIndex<ScopedRequest | undefined>(0);
    if (req === undefined || req === null) return;
    let scope = req[SCOPE] ?? req.raw?.[SCOPE];
    if (scope === undefined) {
      const reply = ctx.getArgByIndex<ServerResponse | { raw: ServerResponse }>(1);
      const res = 'raw' in reply ? reply.raw : reply; // a Fastify reply wraps Node's response; Express's is one
      scope = this.open(req, res);
      if (scope === undefined) return;
    }
    if (scope.classRef === undefined) {
      scope.classRef = ctx.getClass();
      scope.handler = ctx.getHandler();
    }
    if (!scope.entered) this.storage.enterWith(scope);
  }

  /** Stops listening to the HTTP server (the module is shutting down). */
  close(): void {
    this.listening?.server.removeListener('request', this.listening.listener);
    this.listening = undefined;
  }

  /** Puts the listener that gives each request a scope before the app's own, on the app's HTTP server. */
  private listen(): void {
    const server = this.httpServer() as Partial<EventEmitter> | undefined;
    if (typeof server?.prependListener !== 'function') return;
    const listener: RequestListener = (req, res) => {
      const scope = this.open(req, res);
      if (scope === undefined || this.storage === undefined) return;
      this.storage.enterWith(scope);
      scope.entered = true;
    };
    server.prependListener('request', listener);
    this.listening = { server: server as EventEmitter, listener };
  }

  /** A new scope for the request, ended when its response closes; none when it has closed already. */
  private open(req: ScopedRequest, res: ServerResponse): Scope | undefined {
    // Closed already (the client left before the guards): 'close' will not come again to end a scope.
    if (res.destroyed) return undefined;
    const scope: Scope = {
      classRef: undefined,
      handler: undefined,
      reservations: undefined,
      ended: false,
      entered: false,
    };
    req[SCOPE] = scope;
    res.once('close', () => this.end(scope));
    return scope;
  }

  /** The request's response has closed: what is still open is settled at its estimate and reported. */
  private end(scope: Scope): void {
    scope.ended = true;
    if (scope.reservations === undefined) return;
    const left = [...scope.reservations].filter((reservation) => reservation.settleAtEstimate());
    scope.reservations = undefined;
    if (left.length === 0) return;
    const label =
      scope.classRef === undefined
        ? 'an HTTP request that reached no guard of the module (a GraphQL query, a route with no handler)'
        : handlerLabel(scope.classRef, scope.handler);
    for (const reservation of left) this.report(label, reservation.estimates);
  }

  /** One warning per reservation, throttled per handler and policies; keys are never logged (they may be secret). */
  private report(label: string, estimates: readonly { policy: string; cost: number }[]): void {
    if (estimates.length === 0) return; // only shadow items: nothing was charged
    const perPolicy = summed(new Map(), estimates);
    const reason = `${label} ${[...perPolicy.keys()].join(',')}`;
    let written = false;
    this.log.note(reason, (heldCount) => {
      written = true;
      const sums = this.held.get(reason);
      this.held.delete(reason);
      const sum = sums === undefined ? '' : ` (${listed(sums)})`;
      const more = heldCount > 0 ? `; so were ${heldCount} more since the last report${sum}` : '';
      this.logger.warn(
        `A reservation made in ${label} (RateLimitService.reserve) was neither settled nor cancelled when its ` +
          `request ended, so it stays charged at its estimate (${listed(perPolicy)})${more}: settle or cancel ` +
          `every reservation`,
      );
    });
    if (written) return;
    if (!this.held.has(reason) && this.held.size >= MAX_REASONS) this.held.clear();
    this.held.set(reason, summed(this.held.get(reason) ?? new Map(), estimates));
  }
}

/** `sums` with each estimate's cost added to its policy's. */
function summed(
  sums: Map<string, number>,
  estimates: readonly { policy: string; cost: number }[],
): Map<string, number> {
  for (const { policy, cost } of estimates) sums.set(policy, (sums.get(policy) ?? 0) + cost);
  return sums;
}

/** `policy: units` pairs, comma-separated. */
const listed = (pairs: Iterable<readonly [string, number]>): string =>
  [...pairs].map(([policy, cost]) => `${policy}: ${cost}`).join(', ');
