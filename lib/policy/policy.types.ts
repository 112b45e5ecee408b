import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitListFunction } from '../lists/address-list.js';
import type {
  RateLimitCount,
  RateLimitIdentities,
  RateLimitKey,
  RateLimitListEntry,
  RateLimitOutcome,
  RateLimitSettle,
} from './request-functions.js';

export type {
  RateLimitCount,
  RateLimitIdentities,
  RateLimitKey,
  RateLimitListEntry,
  RateLimitListFunction,
  RateLimitOutcome,
  RateLimitSettle,
};

/** A calendar period of a quota: 'day' or 'month', in an IANA time zone. */
export type QuotaPeriod = 'day' | 'month';

/**
 * A length of time: whole milliseconds, or a whole number with a unit — '500ms', '10s', '1m', '1h', '1d'. A
 * string such as '1 minute' does not compile; one read from configuration needs a cast (it is checked at start).
 */
export type RateLimitDuration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/**
 * The seven algorithms: fixed window, sliding window log, sliding window counter, token bucket, GCRA, concurrency
 * limits and calendar quotas (each listed in ALGORITHMS).
 */
export type RateLimitAlgorithm =
  'fixed-window' | 'sliding-window-log' | 'sliding-window-counter' | 'token-bucket' | 'gcra' | 'quota' | 'concurrency';

/**
 * Every algorithm a policy can name, all seven: the five rate limits, the concurrency limit (requests in
 * flight) and calendar quotas.
 * @example ALGORITHMS.includes(policy.algorithm)
 */
export const ALGORITHMS: readonly RateLimitAlgorithm[] = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'gcra',
  'concurrency',
  'quota',
];

/**
 * Whether a policy denies ('enforce') or only reports what it would deny ('shadow'): a shadow policy is decided
 * in the same store call as the others, consumes nothing when it would deny, never denies, is left out of the
 * rate-limit headers, and its would-be denials are logged (once per policy per minute) and passed to
 * `onDecision` with `shadow: true`. This is how a new limit is rolled out safely.
 */
export type RateLimitMode = 'enforce' | 'shadow';

/**
 * What to do when the store cannot answer in time: let the request through ('open'), refuse it ('closed'), or
 * decide it in this process's memory on the policy's `localLimit` ('local') until the store answers again.
 */
export type FailMode = 'open' | 'closed' | 'local';

/**
 * Whose budget a policy is: `'shared'` (the default) is one budget per key for every route the policy applies
 * to; `'route'` one per route and key (a controller class and handler, a resolver field, a gateway message, a
 * message pattern), as @nestjs/throttler keeps its limits. RateLimitService names a route's budget as
 * `'<name>@<Class>.<method>'`.
 */
export type RateLimitScope = 'shared' | 'route';

interface PolicyBase {
  /** Unique per route; default derived from algorithm, limit and window. Shown in headers and errors. */
  name?: string;
  /** `'shared'` (default): one budget per key across routes; `'route'`: one per route and key. */
  scope?: RateLimitScope;
  /** Default 'user'. A function returning undefined skips this policy for that request. */
  key?: RateLimitKey;
  /** Units one request consumes, a non-negative integer; default 1. */
  cost?: number | ((ctx: ExecutionContext) => number | Promise<number>);
  /**
   * What this policy does when its store fails or is too slow: 'open' lets requests through, 'closed' refuses
   * them (503), 'local' decides them in this process on `localLimit`; default the module's.
   */
  failMode?: FailMode;
  /**
   * With `failMode: 'local'`: the limit (an integer >= 1) each process enforces on its own while the store
   * fails, in the same window (or period); default `ceil(limit / instances)` of the request's limit, never more
   * than it. A token bucket's or GCRA's burst is scaled by the same ratio.
   * @example { algorithm: 'sliding-window-counter', limit: 600, window: '1m', failMode: 'local', localLimit: 200 }
   */
  localLimit?: number;
  /** Default the module's `mode`, which defaults to 'enforce'. 'shadow' reports, never denies. */
  mode?: RateLimitMode;
  /**
   * A penalty: once this policy denies a key, the key stays denied for this long from that moment (ms, or a
   * duration like '15m'), set in the same atomic step as the denial. Requests during the block are denied
   * without extending it, and Retry-After counts it down.
   */
  block?: RateLimitDuration;
  /** Requests this policy does not apply to (it is skipped for them, nothing is consumed). */
  allow?: readonly RateLimitListEntry[];
  /** Requests refused with 403 (`RATE_LIMIT_DENY_LIST`) wherever this policy would run; checked before any allow. */
  deny?: readonly RateLimitListEntry[];
  /**
   * Which invocations count, judged by their outcome; default 'all'. Others are charged at admission and
   * refunded when they end (one store call per refunded invocation). See RateLimitCount.
   * @example { name: 'login', algorithm: 'sliding-window-log', limit: 5, window: '15m', key: accountOf, count: 'failed' }
   */
  count?: RateLimitCount;
  /**
   * Reserve, then settle: `cost` is charged when the request is decided (an estimate), and once the handler has
   * produced its result this gives the actual cost; the difference is given back, or the overrun charged
   * (which may leave the key in debt). A handler that throws gets the whole charge back. See RateLimitSettle.
   * @example { name: 'ai-tokens', algorithm: 'token-bucket', limit: 10_000, window: '1m', cost: estimateOf, settle: (ctx, r: Completion) => r.usage.totalTokens }
   */
  // A method, so that a settle function may type its result as the handler's (methods' parameters are bivariant).
  settle?(ctx: ExecutionContext, result: unknown): number | Promise<number>;
  /**
   * For a hot key (a tenant-wide or global limit): this instance takes up to `lease` units of a key from the
   * store in one call and admits from them locally until they are spent or lapse (at the end of their window
   * or period; for token-bucket and GCRA once the bucket would have refilled them). Units are taken before they
   * are spent, so the fleet never admits more than the limit; it may admit less, by at most instances × lease
   * per window. An integer >= 2, for fixed-window, sliding-window-counter, token-bucket, gcra and quota
   * policies with `count: 'all'`; store calls on a hot key fall to about one per `lease` requests.
   * @example { name: 'tenant', algorithm: 'fixed-window', limit: 50_000, window: '1s', key: tenantOf, lease: 100 }
   */
  lease?: number;
}

/**
 * One rate limit: `limit` requests (or cost units) per `window`. With `algorithm: 'concurrency'`, `limit` is
 * the number of requests (or units) of a key in flight at once, and `window` the slot time after which the
 * slot of a request whose process never gave it back (a crash) expires; a slot is given back when the
 * response is finished, the handler throws or the client goes away.
 * @example { name: 'login-ip', algorithm: 'sliding-window-log', limit: 5, window: '1m', key: 'ip', failMode: 'closed' }
 * @example { name: 'ai-generations', algorithm: 'concurrency', limit: 2, window: '5m' }
 */
export interface RateLimitWindowPolicy extends PolicyBase {
  /**
   * 'fixed-window', 'sliding-window-log' (exact; small limits such as logins), 'sliding-window-counter' (the
   * general choice), 'token-bucket' or 'gcra' (bursts and costs), or 'concurrency' (requests in flight).
   */
  algorithm: Exclude<RateLimitAlgorithm, 'quota'>;
  /**
   * Requests (or cost units) per window; an integer >= 1, or a function of the request (the caller's plan,
   * may be async). A key whose limit changes is decided with the new limit at its next request, from the
   * units it has already used.
   */
  limit: number | ((ctx: ExecutionContext) => number | Promise<number>);
  /** Milliseconds, or a duration string: '500ms', '10s', '1m', '1h', '1d'. */
  window: RateLimitDuration;
  /**
   * Fixed windows only: where a key's windows begin. `'clock'` (the default): at multiples of `window` since
   * the epoch, the same for every key. `'first-request'`: at the key's first request after its previous window
   * ended, as @nest-lab/throttler-storage-redis counts for @nestjs/throttler.
   */
  anchor?: 'clock' | 'first-request';
  /**
   * Token-bucket capacity / GCRA burst, an integer >= 1 or a function of the request; default `limit`. The
   * rate is always limit per window.
   */
  burst?: number | ((ctx: ExecutionContext) => number | Promise<number>);
}

/**
 * A quota: at most `limit` units per calendar day or month, as the clocks of `timeZone` show them. The limit may
 * depend on the request (the caller's plan). With the `postgres` option, usage is kept in a durable table.
 * @example { name: 'ai-monthly', algorithm: 'quota', period: 'month', timeZone: 'Europe/Paris', limit: (ctx) => planOf(ctx).tokens }
 */
export interface RateLimitQuotaPolicy extends PolicyBase {
  /** A calendar quota (docs/quotas.md). */
  algorithm: 'quota';
  /** 'day' or 'month', as the clocks of `timeZone` show them. */
  period: QuotaPeriod;
  /** IANA time zone of the calendar; default 'UTC'. */
  timeZone?: string;
  /** Units per period, an integer >= 1, or a function of the request (may be async). */
  limit: number | ((ctx: ExecutionContext) => number | Promise<number>);
  /** Not used by quotas: their period is `period`. */
  window?: never;
  /** Not used by quotas. */
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
   * limits (a stricter `per-user` on one route), the name with a suffix, so the two never share counters; for
   * `scope: 'route'`, followed by `@<Class>.<method>` of the route.
   */
  readonly id: string;
  /**
   * The tag of the shape of the policy's stored state (lib/policy/state-shape.ts): what gives its stored values
   * their meaning (algorithm, window, anchor, a quota's calendar). The stores key a policy's state by its id and
   * this shape together, so a deploy that changes the shape under the same name never reads the old state.
   */
  readonly shape: string;
  /** A fixed window's windows begin at a key's first request (else at multiples of the window). */
  readonly anchor?: 'first-request';
  /** For `scope: 'route'`: the route whose budget this is (`Class.method`). */
  readonly route?: string;
  readonly algorithm: RateLimitAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly capacity: number;
  readonly failMode?: FailMode;
  /** The policy's `localLimit`, if it has one (else `ceil(limit / instances)` applies under 'local'). */
  readonly localLimit?: number;
  /** The policy's own mode, if it has one (the module's applies otherwise). */
  readonly mode?: RateLimitMode;
  /** The block after a denial, in milliseconds; undefined: none. */
  readonly blockMs?: number;
  /** The most units an instance takes from the store for local use (RateLimitPolicy.lease); undefined: none. */
  readonly lease?: number;
  /** For quotas: the calendar period and its time zone; `windowMs` is then a nominal period length. */
  readonly quota?: { readonly period: QuotaPeriod; readonly timeZone: string };
  readonly source: RateLimitPolicy;
}

/**
 * Where a decision came from: the store ('store'), this instance's cache of the store's denials without a
 * store call ('deny-cache'), units this instance took ahead from the store ('lease'), the in-process store of
 * a `failMode: 'local'` policy while its store fails ('local'), or no store at all because it failed: admitted
 * by `failMode: 'open'` ('fail-open') or refused by `failMode: 'closed'` ('fail-closed'); or not a policy's
 * decision at all: load shedding refused the request before any policy was decided ('shed').
 * @example onDecision: (e) => { if (e.source !== 'store') log.debug(`${e.policy}: decided by ${e.source}`); }
 */
export type RateLimitDecisionSource = 'store' | 'deny-cache' | 'lease' | 'local' | 'fail-open' | 'fail-closed' | 'shed';

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
  /** True when the key is blocked: by this denial (the policy's `block`), before it, or by RateLimitService.block. */
  blocked?: boolean;
  /** The units a consume took when its item asked for up to more than its cost (a lease), set when allowed. */
  granted?: number;
}
