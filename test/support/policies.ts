import type { ExecutionContext } from '@nestjs/common';

import type { RateLimitPolicy, RateLimitWindowPolicy } from '../../lib/index.js';
import type { RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import type { QuotaPeriod } from '../../lib/policy/policy.types.js';

/**
 * What a test says of a policy whatever its algorithm: the fields of a rate limit but its algorithm, and a
 * quota's calendar (`period` a day unless said, `timeZone` UTC unless said). `burst` and `anchor` are left to
 * the tests of the algorithms that have them.
 */
export type PolicyFields = Omit<RateLimitWindowPolicy, 'algorithm' | 'anchor' | 'burst'> & {
  readonly period?: QuotaPeriod;
  readonly timeZone?: string;
};

/**
 * The policy of `algorithm` a test means by "limit per window": for the five rate limits `limit` per `window`;
 * for a concurrency limit `limit` in flight, each held until given back or until its lease (`window`) expires;
 * for a quota `limit` per calendar `period` (a day unless said), with no window. A test whose expectation
 * differs for concurrency or quota says so where it asserts (see windowEnds and heldInFlight).
 * @example policyOf('quota', { name: 'q', limit: 5, window: '1h' }) // { name: 'q', algorithm: 'quota', limit: 5, period: 'day' }
 */
export function policyOf(algorithm: RateLimitAlgorithm, fields: PolicyFields): RateLimitPolicy {
  const { window, period = 'day', timeZone, ...common } = fields;
  if (algorithm === 'quota') return { ...common, algorithm, period, ...(timeZone === undefined ? {} : { timeZone }) };
  return { ...common, algorithm, window };
}

/**
 * Whether the units a policy admitted come back once its `window` has passed with no other call: true for the
 * five rate limits and a concurrency limit (its leases expire after `window`); false for a quota, whose units
 * come back when its calendar period ends.
 */
export const windowEnds = (algorithm: RateLimitAlgorithm): boolean => algorithm !== 'quota';

/**
 * Whether the algorithm counts requests in flight (a concurrency limit): a request that has finished gave its
 * unit back, so a test of "n admitted, then denied" over HTTP holds the admitted requests open.
 */
export const heldInFlight = (algorithm: RateLimitAlgorithm): boolean => algorithm === 'concurrency';

/**
 * A fixed window of `limit` a minute, keyed by the client's IP: the policy the HTTP, GraphQL and WebSocket tests
 * put on a handler when its algorithm is not what they test; `extra` adds fields (a fail mode, lists, a block).
 * @example perMinute('login', 3, { failMode: 'closed' }) // { name: 'login', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip', failMode: 'closed' }
 */
export const perMinute = (
  name: string,
  limit: number,
  extra: Partial<RateLimitWindowPolicy> = {},
): RateLimitWindowPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit,
  window: '1m',
  key: 'ip',
  ...extra,
});

/** A key function of the `x-tenant` header: `tenant:<name>`, or no identity (the policy is skipped) without one. */
export const tenantOf = (ctx: ExecutionContext): string | undefined => {
  const tenant = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-tenant'];
  return tenant === undefined ? undefined : `tenant:${tenant}`;
};
