import { AsyncLocalStorage } from 'node:async_hooks';
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

/** The reservations made while one HTTP request was being handled, until its response closes. */
interface Scope {
  /** The request's handler, named `Class.method` in the log (only when something leaked: labels cost). */
  readonly classRef: unknown;
  readonly handler: unknown;
  /** Made on the first reservation: most requests make none. */
  reservations: Set<Reservation> | undefined;
  /** Its response has closed: code that still runs in it (a timer the handler left) reserves untracked. */
  ended: boolean;
}

/**
 * Settles at its estimate, and reports once in the log, each reservation (RateLimitService.reserve) that its
 * HTTP request left neither settled nor cancelled when its response closed. Free until used: nothing is
 * tracked, and the guards do nothing per request, until the first reserve() turns tracking on (that first
 * reservation is not tracked). The guards then enter the request's scope (AsyncLocalStorage.enterWith),
 * synchronously at the start of canActivate, which reaches the handler only while no guard before them has
 * awaited; a reservation made where no open scope is seen is not tracked. enterWith sets the store on what
 * runs the request, which Node shares between the requests of one keep-alive connection: the next request
 * sees this scope until a guard enters its own, so a scope that ended takes no more reservations (and with
 * pipelining a middleware's reservation may join the previous request's scope while it is still open).
 */
export class ReservationScopes {
  private storage: AsyncLocalStorage<Scope> | undefined;
  private readonly log: ThrottledLog;
  /** Per reason, the estimates of the reports the log held back, summed by policy, for its next line. */
  private readonly held = new Map<string, Map<string, number>>();

  /** `now`: the monotonic time the log is throttled by (a test drives it). */
  constructor(
    private readonly logger: Logger,
    now: () => number = monotonicNow,
  ) {
    this.log = new ThrottledLog(QUIET_MS, now, MAX_REASONS);
  }

  /** A reservation just made: the first one turns tracking on; later ones join the open scope they run in. */
  track(reservation: Reservation): void {
    if (this.storage === undefined) {
      this.storage = new AsyncLocalStorage();
      return;
    }
    const scope = this.storage.getStore();
    if (scope === undefined || scope.ended || reservation.done) return;
    (scope.reservations ??= new Set()).add(reservation);
  }

  /**
   * Enters the scope of the request of `ctx` (HTTP only), once tracking is on. Call it synchronously, before
   * any await of the caller: the store is set on the current execution, which Nest's router continues to
   * the handler.
   */
  enter(ctx: ExecutionContext): void {
    if (this.storage === undefined || ctx.getType() !== 'http') return;
    const req = ctx.getArgByIndex<{ [SCOPE]?: Scope } | undefined>(0);
    if (req === undefined || req === null) return;
    let scope = req[SCOPE];
    if (scope === undefined) {
      const reply = ctx.getArgByIndex<ServerResponse | { raw: ServerResponse }>(1);
      const res = 'raw' in reply ? reply.raw : reply; // a Fastify reply wraps Node's response; Express's is one
      // Closed already (the client left before the guards): 'close' will not come again to end a scope.
      if (res.destroyed) return;
      const opened: Scope = {
        classRef: ctx.getClass(),
        handler: ctx.getHandler(),
        reservations: undefined,
        ended: false,
      };
      req[SCOPE] = scope = opened;
      res.once('close', () => this.end(opened));
    }
    this.storage.enterWith(scope);
  }

  /** The request's response has closed: what is still open is settled at its estimate and reported. */
  private end(scope: Scope): void {
    scope.ended = true;
    if (scope.reservations === undefined) return;
    const left = [...scope.reservations].filter((reservation) => reservation.settleAtEstimate());
    scope.reservations = undefined;
    if (left.length === 0) return;
    const label = handlerLabel(scope.classRef, scope.handler);
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
