import { RateLimitPolicyError } from './policy.errors.js';
import type { ResolvedPolicy } from './policy.types.js';
import { checkQuotaLimit, checkRequestLimit, describeValue } from './value-checks.js';
import { parseWindow } from './window.js';

/**
 * What RateLimitService.override changes for one identity of a policy: its `limit`, its `burst` (token bucket
 * and GCRA), for `ttl` (milliseconds, or a duration such as `'2h'`; absent: until removed), with a `reason` for
 * the log; `shadow: true` is a dry run, which changes no decision and reports what the override would have
 * answered.
 */
export interface RateLimitOverrideChange {
  limit?: number;
  burst?: number;
  ttl?: number | string;
  reason?: string;
  shadow?: boolean;
}

/**
 * An override in force: the policy's name, the identity as the store keeps it (its keyed hash, never the raw
 * identity), the limit and burst that replace the declared ones (undefined: the declared one applies), when it
 * lapses (undefined: when removed), the reason given, whether it is a dry run, and when it was set.
 */
export interface RateLimitOverride {
  readonly policy: string;
  readonly identity: string;
  readonly limit: number | undefined;
  readonly burst: number | undefined;
  readonly until: Date | undefined;
  readonly reason: string | undefined;
  readonly shadow: boolean;
  readonly setAt: Date;
}

/** A change checked: what an override keeps, its lapse as a duration from now. */
export interface CheckedOverrideChange {
  readonly limit?: number;
  readonly burst?: number;
  readonly ttlMs?: number;
  readonly reason?: string;
  readonly shadow: boolean;
}

const FIELDS = new Set(['limit', 'burst', 'ttl', 'reason', 'shadow']);
/** The longest reason kept: it is logged and stored with the override. */
const MAX_REASON_LENGTH = 500;
/** Where the errors of a change say it was given. */
const WHERE = 'RateLimitService.override';

/** Whether a policy of `algorithm` has a burst of its own (its capacity). */
export const hasBurst = (policy: ResolvedPolicy): boolean =>
  policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';

/**
 * Checks the change of an override of `policy`: a RateLimitPolicyError names the field that is wrong (an unknown
 * one, a limit that is not an integer >= 1, a burst of an algorithm without one, a bad ttl).
 */
export function checkOverrideChange(policy: ResolvedPolicy, change: unknown): CheckedOverrideChange {
  const fail = (field: string, problem: string): never => {
    throw new RateLimitPolicyError(problem, { policy: policy.name, field, where: WHERE });
  };
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    return fail('change', `the change must be an object such as { limit: 100 }, got ${describeValue(change)}`);
  }
  const given = change as Record<string, unknown>;
  for (const field of Object.keys(given)) {
    if (!FIELDS.has(field)) fail(field, `an override has no field "${field}": it takes ${[...FIELDS].join(', ')}`);
  }
  const limit = given.limit === undefined ? undefined : checkedLimit(policy, given.limit, 'limit', fail);
  let burst: number | undefined;
  if (given.burst !== undefined) {
    if (!hasBurst(policy)) {
      fail('burst', `a ${policy.algorithm} policy has no burst (only token-bucket and gcra have one)`);
    }
    burst = checkedLimit(policy, given.burst, 'burst', fail);
  }
  if (limit === undefined && burst === undefined) {
    fail('limit', `an override needs a limit${hasBurst(policy) ? ' or a burst' : ''}, got neither`);
  }
  let ttlMs: number | undefined;
  if (given.ttl !== undefined) {
    ttlMs = parseWindow(given.ttl);
    if (ttlMs === undefined) {
      fail('ttl', `ttl must be milliseconds >= 1 or a duration such as '2h', got ${describeValue(given.ttl)}`);
    }
  }
  const { reason, shadow = false } = given;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_LENGTH)) {
    fail('reason', `reason must be a string of at most ${MAX_REASON_LENGTH} characters, got ${describeValue(reason)}`);
  }
  if (typeof shadow !== 'boolean') fail('shadow', `shadow must be true or false, got ${describeValue(shadow)}`);
  return { limit, burst, ttlMs, reason: reason as string | undefined, shadow: shadow as boolean };
}

/** A limit or burst of an override, checked as a limit function's value is. */
function checkedLimit(
  policy: ResolvedPolicy,
  value: unknown,
  field: 'limit' | 'burst',
  fail: (field: string, problem: string) => never,
): number {
  const failField = (problem: string): never => fail(field, problem.replace(/^limit/, field));
  return policy.quota === undefined
    ? checkRequestLimit(value, policy.windowMs, failField, field === 'limit' && policy.algorithm === 'gcra')
    : checkQuotaLimit(value, failField);
}
