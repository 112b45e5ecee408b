import type { ExecutionContext } from '@nestjs/common';

import type { RateLimitListFunction } from '../lists/address-list.js';

/**
 * The identities the module computes for a request, for key functions to compose: `ip` is the client address
 * exactly as `'ip'` keys see it (trustProxy applied, IPv6 reduced to its prefix; undefined where there is none,
 * as for a microservice message), `user` the user as `'user'` keys see it (undefined when there is none). Each
 * is computed when read.
 * @example key: (ctx, id) => `${id.ip}:${ctx.getClass().name}.${ctx.getHandler().name}`
 */
export interface RateLimitIdentities {
  readonly ip: string | undefined;
  readonly user: string | undefined;
}

/**
 * How a request is keyed: the client IP, the authenticated user (falling back to the IP), or a function of
 * the request and the identities the module computes for it.
 */
export type RateLimitKey =
  | 'ip'
  | 'user'
  | ((ctx: ExecutionContext, id: RateLimitIdentities) => string | undefined | Promise<string | undefined>);

/**
 * An entry of an `allow` or `deny` list: a client address or CIDR range, IPv4 or IPv6, matched against the
 * client's full address as `'ip'` keys read it (trustProxy applied; not reduced to its /64), or a function.
 * @example ['10.0.0.0/8', '2001:db8::/32', '203.0.113.7', (ctx) => ctx.switchToHttp().getRequest().user?.role === 'admin']
 */
export type RateLimitListEntry = string | RateLimitListFunction;
/**
 * How an invocation ended, for a `count` function: `status` is the HTTP status sent (HTTP routes only),
 * `error` what the handler threw (present only when it threw), `context` the invocation's ExecutionContext.
 * @example (outcome) => outcome.status === 401
 */
export interface RateLimitOutcome {
  readonly status?: number;
  readonly error?: unknown;
  readonly context: ExecutionContext;
}

/**
 * Which invocations a policy counts. Every invocation is charged when it is decided, so concurrent ones cannot
 * slip through; when its outcome is known, the charge is refunded unless the invocation counts. `'all'` (the
 * default) counts every one; `'failed'` those that fail (HTTP: status >= 400 or an exception; other contexts:
 * an exception); `'succeeded'` the others; a function returns true to count, false to refund.
 * @example count: 'failed' // 5 failed logins per account: successful ones are given back
 */
export type RateLimitCount = 'all' | 'failed' | 'succeeded' | ((outcome: RateLimitOutcome) => boolean);

/**
 * The actual cost of an invocation, from its handler's result (for a handler that returns an Observable, such
 * as an `@Sse()` one, the last value it emitted before completing: where model SDKs put the usage). A
 * non-negative integer; the policy's `cost` was the estimate charged when the request was decided.
 * @example settle: (ctx, result: { usage: { totalTokens: number } }) => result.usage.totalTokens
 */
export type RateLimitSettle = (ctx: ExecutionContext, result: unknown) => number | Promise<number>;
