import { compileList } from '../lists/address-list.js';
import type { RateLimitPolicy, ResolvedPolicy } from './policy.types.js';
import { checkCost, describeValue } from './value-checks.js';
import { parseWindow } from './window.js';

/**
 * The fields every kind of policy has (window policies and quotas alike), and their checks. `fail` throws the
 * RateLimitPolicyError that names the policy, where it is declared and the field.
 */
export type Fail = (field: string, problem: string) => never;

/** The field names both kinds of policy accept. */
export const COMMON_FIELDS = {
  name: true,
  algorithm: true,
  limit: true,
  key: true,
  cost: true,
  failMode: true,
  localLimit: true,
  mode: true,
  block: true,
  allow: true,
  deny: true,
  count: true,
  settle: true,
  scope: true,
  lease: true,
} as const;

const COUNTS: readonly unknown[] = ['all', 'failed', 'succeeded'];
const FAIL_MODES: readonly unknown[] = ['open', 'closed', 'local'];

/** A static limit is an integer >= 1; a function of the request is checked on each of its results. */
export function checkLimitField(limit: unknown, fail: Fail): void {
  if (typeof limit !== 'function' && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
    fail('limit', `must be an integer >= 1 or a function of the request, got ${describeValue(limit)}`);
  }
}

/**
 * Checks the fields every kind of policy has (checkCommonFields) and resolves those the engine reads: the
 * fail mode, `localLimit` (no more than `staticLimit`), the mode, the block and the lease, to spread into the
 * resolved policy.
 */
export function resolveCommonFields(
  policy: RateLimitPolicy,
  staticLimit: number,
  fail: Fail,
): Pick<ResolvedPolicy, 'failMode' | 'localLimit' | 'mode' | 'blockMs' | 'lease'> {
  checkCommonFields(policy, fail);
  return {
    failMode: policy.failMode,
    ...localLimitOf(policy, staticLimit, fail),
    mode: policy.mode,
    ...blockOf(policy, fail),
    ...leaseOf(policy, fail),
  };
}

/** Checks scope, cost, key, failMode, mode, the lists and count. */
function checkCommonFields(policy: RateLimitPolicy, fail: Fail): void {
  if (policy.scope !== undefined && policy.scope !== 'shared' && policy.scope !== 'route') {
    fail('scope', `must be 'shared' or 'route', got ${describeValue(policy.scope)}`);
  }
  if (policy.cost !== undefined && typeof policy.cost !== 'function') {
    checkCost(policy.cost, (problem) => fail('cost', problem));
  }
  if (policy.key !== undefined && policy.key !== 'ip' && policy.key !== 'user' && typeof policy.key !== 'function') {
    fail('key', `must be 'ip', 'user' or a function, got ${describeValue(policy.key)}`);
  }
  if (policy.failMode !== undefined && !FAIL_MODES.includes(policy.failMode)) {
    fail('failMode', `must be 'open', 'closed' or 'local', got ${describeValue(policy.failMode)}`);
  }
  if (policy.mode !== undefined && policy.mode !== 'enforce' && policy.mode !== 'shadow') {
    fail('mode', `must be 'enforce' or 'shadow', got ${describeValue(policy.mode)}`);
  }
  compileList(policy.allow, (problem) => fail('allow', problem));
  compileList(policy.deny, (problem) => fail('deny', problem));
  const { count } = policy;
  if (count !== undefined && policy.algorithm === 'concurrency') {
    fail('count', 'does not apply to concurrency: a slot is given back at the end of every request');
  }
  if (count !== undefined && typeof count !== 'function' && !COUNTS.includes(count)) {
    fail('count', `must be 'all', 'failed', 'succeeded' or a function of the outcome, got ${describeValue(count)}`);
  }
  checkSettle(policy, fail);
}

/** `settle`: a function, on a policy whose charge can be settled (not a concurrency slot, a count, a lease). */
function checkSettle(policy: RateLimitPolicy, fail: Fail): void {
  const { settle } = policy;
  if (settle === undefined) return;
  if (typeof settle !== 'function') {
    fail('settle', `must be a function (ctx, result) => the actual cost, got ${describeValue(settle)}`);
  }
  if (policy.algorithm === 'concurrency') {
    fail('settle', 'does not apply to concurrency: a slot is given back at the end of every request, whatever it cost');
  }
  if (policy.count !== undefined && policy.count !== 'all') {
    fail('settle', "does not combine with count: settling already gives back a failed invocation's whole charge");
  }
  if (policy.lease !== undefined) {
    fail('settle', 'does not combine with lease: leased units are spent locally, where a settlement would not reach');
  }
}

/** The policy's `block` in milliseconds, as a field to spread into the resolved policy. */
function blockOf(policy: RateLimitPolicy, fail: Fail): { blockMs?: number } {
  if (policy.block === undefined) return {};
  const blockMs = parseWindow(policy.block);
  if (blockMs === undefined) {
    fail(
      'block',
      `must be a whole number of milliseconds >= 1 or a duration like '30s', '15m', '1h', got ${describeValue(policy.block)}`,
    );
  }
  return { blockMs };
}

/** The algorithms whose units an instance can take ahead and spend locally (RateLimitPolicy.lease). */
const LEASABLE: readonly unknown[] = ['fixed-window', 'sliding-window-counter', 'token-bucket', 'gcra', 'quota'];

/** The policy's `lease`, as a field to spread into the resolved policy. */
function leaseOf(policy: RateLimitPolicy, fail: Fail): { lease?: number } {
  const { lease } = policy;
  if (lease === undefined) return {};
  if (typeof lease !== 'number' || !Number.isSafeInteger(lease) || lease < 2) {
    fail('lease', `must be an integer >= 2 (units taken from the store at once), got ${describeValue(lease)}`);
  }
  if (!LEASABLE.includes(policy.algorithm)) {
    fail(
      'lease',
      `does not apply to ${policy.algorithm}: only fixed-window, sliding-window-counter, token-bucket, gcra and quota policies take units ahead`,
    );
  }
  if (policy.count !== undefined && policy.count !== 'all') {
    fail(
      'lease',
      "does not combine with count: leased units are spent locally, and an outcome's refund would not reach them",
    );
  }
  if (policy.block !== undefined) {
    fail('lease', 'does not combine with block: an instance would go on spending its units while the key is blocked');
  }
  return { lease };
}

/**
 * The policy's `localLimit`, as a field to spread into the resolved policy: an integer >= 1, no more than a
 * static `limit`, and only beside `failMode: 'local'` when the policy names its fail mode (without one, the
 * module's fail mode decides, checked where the policy is planned).
 */
function localLimitOf(policy: RateLimitPolicy, staticLimit: number, fail: Fail): { localLimit?: number } {
  const { localLimit } = policy;
  if (localLimit === undefined) return {};
  if (typeof localLimit !== 'number' || !Number.isSafeInteger(localLimit) || localLimit < 1) {
    fail('localLimit', `must be an integer >= 1, got ${describeValue(localLimit)}`);
  }
  if (policy.failMode !== undefined && policy.failMode !== 'local') {
    fail('localLimit', `applies only with failMode 'local', and this policy's failMode is '${policy.failMode}'`);
  }
  if (localLimit > staticLimit) {
    fail('localLimit', `must not exceed limit (${staticLimit}), got ${localLimit}: a process alone never admits more`);
  }
  return { localLimit };
}
