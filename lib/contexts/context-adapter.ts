import type { ExecutionContext, Logger } from '@nestjs/common';
import type { HttpAdapterHost, ModuleRef } from '@nestjs/core';

import type { TrustFn } from '../keys/client-ip.js';
import type { Criticality } from '../policy/criticality.js';
import type { ContextType } from '../planning/handler-kinds.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

export type { ContextType };

/** What a denial tells every kind of client: the body of 429s, GraphQL extensions, WS and RPC errors. */
export interface RateLimitDenial {
  readonly code: 'RATE_LIMITED';
  readonly message: string;
  /** The denying policy's name. */
  readonly policy: string;
  /** Whole seconds >= 1; absent when retrying cannot help (a cost that never fits). */
  readonly retryAfter?: number;
}

/**
 * What a request refused by a deny list tells every kind of client: the body of 403s, GraphQL extensions,
 * WS and RPC errors. Retrying cannot help, so there is no retryAfter.
 */
export interface RateLimitRefusal {
  readonly code: 'RATE_LIMIT_DENY_LIST';
  readonly message: string;
  /** The policy whose deny list matched; undefined for the module's. Kept out of what clients receive. */
  readonly policy: string | undefined;
}

/** What a fail-closed outage tells every kind of client. */
export interface RateLimitUnavailable {
  readonly code: 'RATE_LIMIT_UNAVAILABLE';
  readonly message: string;
  readonly policy: string;
  /** Whole seconds >= 1. */
  readonly retryAfter: number;
}

/**
 * What a request refused by load shedding tells every kind of client (the module's `shedding` option): the
 * instance is overloaded and this request's criticality is not admitted now. Nothing was charged.
 */
export interface RateLimitOverloaded {
  readonly code: 'OVERLOADED';
  readonly message: string;
  /** The handler's criticality (`@Criticality`), the reason it was refused before others. */
  readonly criticality: Criticality;
  /** Whole seconds >= 1: how long the requests in flight take to drain at the current limit. */
  readonly retryAfter: number;
}

/** The enforced policies a response's rate-limit fields show, `decisions[i]` being that of `policies[i]`. */
export interface ShownDecisions {
  readonly policies: readonly ResolvedPolicy[];
  readonly decisions: readonly RateLimitDecision[];
}

/**
 * The three things that differ between Nest contexts; everything else (planning, keys and costs, the one
 * store call, fail modes, the deny cache, all-or-nothing) is the engine's and knows no context.
 * An adapter is stateless apart from what it caches per request on objects of that request.
 */
export interface ContextAdapter {
  readonly type: ContextType;

  /**
   * The object that identifies one decision point of this context (an HTTP request, a GraphQL resolver
   * invocation, a WebSocket message, an RPC message): the limiter keeps its record of the invocation there
   * (lib/limiter/invocation.ts). The same object must be returned to the guard and the interceptor of one
   * invocation.
   */
  invocation(ctx: ExecutionContext): object;

  /** The client's address as `'ip'` keys see it (trustProxy and ipv6Prefix applied), or undefined. */
  clientIp(ctx: ExecutionContext): string | undefined;

  /**
   * The client's full address, from the same hop as `clientIp()` but not reduced to its IPv6 prefix (what
   * allow and deny lists match: `clientAddress()` of keys/client-ip.ts), or undefined when there is none.
   */
  clientAddress(ctx: ExecutionContext): string | undefined;

  /** The authenticated user's id when the module's `user` option is not set. */
  defaultUser(ctx: ExecutionContext): string | undefined;

  /** Writes rate-limit header fields where this context has them (HTTP response); otherwise does nothing. */
  setHeaders(ctx: ExecutionContext, headers: readonly (readonly [string, string])[]): void;

  /**
   * Only for contexts whose invocations share one response (GraphQL: the resolvers of one operation share its
   * HTTP response): adds this invocation's enforced policies and decisions to those the response already
   * shows, and returns them all, each policy once with its most restrictive decision, so that the fields
   * written last still name every policy decided for the response. Absent: a response shows its invocation's.
   */
  accumulate?(
    ctx: ExecutionContext,
    policies: readonly ResolvedPolicy[],
    decisions: readonly RateLimitDecision[],
  ): ShownDecisions;

  /**
   * Stops the invocation: throws what this context's clients understand as a denial (429, a GraphQL error for
   * the field, WsException, RpcException; a dropped event). `decision` is the denying policy's decision that
   * matters most; `violated` names every enforced policy that denied, in the route's order, default
   * `decision`'s alone (HTTP problem details list them; the other contexts' shapes name `denial.policy` alone).
   */
  deny(
    ctx: ExecutionContext,
    denial: RateLimitDenial,
    decision: RateLimitDecision,
    violated?: readonly string[],
  ): never;

  /** Stops the invocation because a fail-closed policy's store is down (503 and its equivalents). */
  unavailable(ctx: ExecutionContext, outage: RateLimitUnavailable): never;

  /** Stops the invocation because a deny list names it (403 and its equivalents). */
  forbid(ctx: ExecutionContext, refusal: RateLimitRefusal): never;

  /** Stops the invocation because load shedding refused it (503 and its equivalents; an event is dropped). */
  overloaded(ctx: ExecutionContext, overload: RateLimitOverloaded): never;
  /**
   * For contexts whose invocations end on their own (HTTP: the response), calls `end` once when the
   * invocation is over: with the status sent, or with undefined when it ended unseen (the client left before
   * the response was finished). The limiter asks only for invocations charged under a `count` policy.
   * Absent: the outcome is the handler's alone, as the limiter's interceptor sees it (GraphQL, WebSocket, RPC).
   */
  watchEnd?(ctx: ExecutionContext, end: (status: number | undefined) => void): void;
}

/** What an adapter is made with: the module's settings that concern reading identities and answering. */
export interface AdapterSettings {
  /** Which X-Forwarded-For hops to believe (compiled `trustProxy`); `clientIp()` of keys/client-ip.ts applies it. */
  readonly trust: TrustFn;
  readonly ipv6Prefix: number;
  /** The module's logger (context 'RateLimit'). */
  readonly logger: Logger;
  readonly httpAdapterHost: HttpAdapterHost;
  readonly moduleRef: ModuleRef;
}

/**
 * Makes the adapter of one context type. Each lives in its own file, loaded (with the optional package it
 * needs: @nestjs/graphql, @nestjs/websockets, @nestjs/microservices) only when the application has handlers
 * of that type.
 */
export type AdapterFactory = (settings: AdapterSettings) => ContextAdapter | Promise<ContextAdapter>;

/**
 * Thrown by the RPC adapter for a denied event (@EventPattern): there is no one to answer, so the module's
 * exception filter turns it into an empty result (the event is dropped; the adapter logs drops itself). A
 * catch-all exception filter of yours that catches it instead should drop the event likewise.
 * @example if (exception instanceof RateLimitDroppedEvent) return EMPTY; // in a catch-all RPC filter
 */
export class RateLimitDroppedEvent extends Error {
  constructor(
    readonly policy: string | undefined,
    message = `event dropped: rate limit "${policy}" exceeded`,
  ) {
    super(message);
    this.name = 'RateLimitDroppedEvent';
  }
}
