import type { ExecutionContext } from '@nestjs/common';

import type { QuotaPeriod } from '../algorithms/quota/quota-period.js';

/** The five rate-limit algorithms, and calendar quotas. */
export type RateLimitAlgorithm =
  'fixed-window' | 'sliding-window-log' | 'sliding-window-counter' | 'token-bucket' | 'gcra' | 'quota';

/** The five rate-limit algorithms (quotas aside). */
export const ALGORITHMS: readonly Exclude<RateLimitAlgorithm, 'quota'>[] = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'gcra',
];

/** What to do when the store cannot answer in time: let the request through, or refuse it. */
export type FailMode = 'open' | 'closed';

/** How a request is keyed: the client IP, the authenticated user (falling back to the IP), or a function. */
export type RateLimitKey =
  'ip' | 'user' | ((ctx: ExecutionContext) => string | undefined | Promise<string | undefined>);

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

interface PolicyBase {
  /** Unique per route; default derived from algorithm, limit and window. Shown in headers and errors. */
  name?: string;
  /** Default 'user'. A function returning undefined skips this policy for that request. */
  key?: RateLimitKey;
  /** Units one request consumes, a non-negative integer; default 1. */
  cost?: number | ((ctx: ExecutionContext) => number | Promise<number>);
  failMode?: FailMode;
  /**
   * Which invocations count, judged by their outcome; default 'all'. Others are charged at admission and
   * refunded when they end (one store call per refunded invocation). See RateLimitCount.
   * @example { name: 'login', algorithm: 'sliding-window-log', limit: 5, window: '15m', key: accountOf, count: 'failed' }
   */
  count?: RateLimitCount;
}

/**
 * One rate limit: `limit` requests (or cost units) per `window`.
 * @example { name: 'login-ip', algorithm: 'sliding-window-log', limit: 5, window: '1m', key: 'ip', failMode: 'closed' }
 */
export interface RateLimitWindowPolicy extends PolicyBase {
  algorithm: Exclude<RateLimitAlgorithm, 'quota'>;
  /** Requests (or cost units) per window; an integer >= 1. */
  limit: number;
  /** Milliseconds, or a duration string: '500ms', '10s', '1m', '1h', '1d'. */
  window: number | string;
  /** Token-bucket capacity / GCRA burst, an integer >= 1; default `limit`. The rate is always limit per window. */
  burst?: number;
}

/**
 * A quota: at most `limit` units per calendar day or month, as the clocks of `timeZone` show them. The limit may
 * depend on the request (the caller's plan). With the `postgres` option, usage is kept in a durable table.
 * @example { name: 'ai-monthly', algorithm: 'quota', period: 'month', timeZone: 'Europe/Paris', limit: (ctx) => planOf(ctx).tokens }
 */
export interface RateLimitQuotaPolicy extends PolicyBase {
  algorithm: 'quota';
  period: QuotaPeriod;
  /** IANA time zone of the calendar; default 'UTC'. */
  timeZone?: string;
  /** Units per period, an integer >= 1, or a function of the request (may be async). */
  limit: number | ((ctx: ExecutionContext) => number | Promise<number>);
  /** Not used by quotas. */
  window?: never;
  burst?: never;
}

/** A rate limit or a quota. */
export type RateLimitPolicy = RateLimitWindowPolicy | RateLimitQuotaPolicy;

/**
 * A validated policy with every default applied and its window in milliseconds: what stores work with.
 * `capacity` is the most units that can pass at once: `burst ?? limit` for token-bucket and GCRA,
 * `limit` for the window algorithms.
 */
export interface ResolvedPolicy {
  readonly name: string;
  /**
   * Names the policy's stored state: the name, or for a policy that replaces a same-named one with other
   * limits (a stricter `per-user` on one route), the name with a suffix, so the two never share counters.
   */
  readonly id: string;
  readonly algorithm: RateLimitAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly failMode?: FailMode;
  /** For quotas: the calendar period and its time zone; `windowMs` is then a nominal period length. */
  readonly quota?: { readonly period: QuotaPeriod; readonly timeZone: string };
  readonly source: RateLimitPolicy;
}

/**
 * The outcome of one policy for one key.
 * `limit` is the policy's capacity (so 0 <= remaining <= limit), `remaining` the units left after this
 * decision, `resetMs` the milliseconds until the key's usage is fully gone, `retryAfterMs` 0 when allowed,
 * else the exact wait before the same request would be allowed (Infinity when its cost can never fit).
 */
export interface RateLimitDecision {
  allowed: boolean;
  policy: string;
  limit: number;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  /** Set when the decision needs explaining, such as a cost larger than the policy's capacity. */
  message?: string;
}
