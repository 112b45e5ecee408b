import { emissionUs, MAX_LEAD_US } from '../algorithms/gcra/gcra.js';
import { checkTimeZone } from '../algorithms/quota/quota-period.js';
import { compileList } from '../lists/address-list.js';
import { RateLimitPolicyError } from './policy.errors.js';
import {
  ALGORITHMS,
  type RateLimitPolicy,
  type RateLimitQuotaPolicy,
  type RateLimitWindowPolicy,
  type ResolvedPolicy,
} from './policy.types.js';
import { fieldNames, unknownField } from '../unknown-fields.js';
import { parseWindow } from './window.js';

/** The most units of 1/windowMs a policy may count: 2^51, a quarter of the exact integers of a double. */
export const MAX_UNITS = 2 ** 51;

const COMMON_FIELDS = {
  name: true,
  algorithm: true,
  limit: true,
  key: true,
  cost: true,
  failMode: true,
  mode: true,
  block: true,
  allow: true,
  deny: true,
  count: true,
  scope: true,
} as const;
const WINDOW_FIELDS = fieldNames<RateLimitWindowPolicy>({ ...COMMON_FIELDS, window: true, burst: true, anchor: true });
// window and burst are known to quotas too, to say why they do not apply there
const QUOTA_FIELDS = fieldNames<RateLimitQuotaPolicy>({
  ...COMMON_FIELDS,
  period: true,
  timeZone: true,
  window: true,
  burst: true,
});

/**
 * The field of a throttler of @nestjs/throttler that a ported policy most often keeps, and what it is here
 * (docs/migration-from-throttler.md): its closest policy field by spelling is no help.
 */
const THROTTLER_FIELDS = {
  ttl: `did you mean "window"? @nestjs/throttler's ttl is a policy's window: ms, or a duration like '1m'`,
};

/** Policy names appear inside Redis keys and quoted header items, so they keep to a safe alphabet. */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** A numeric string: a value read from configuration (an environment variable) that was never converted. */
const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i;

function describe(value: unknown): string {
  if (typeof value === 'string')
    return NUMERIC.test(value) ? `${JSON.stringify(value)} (a string: use Number(...))` : JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  return String(value);
}

/** The name a policy gets when it has none, e.g. `sliding-window-counter-100-1m`. */
export function defaultPolicyName(policy: RateLimitPolicy): string {
  if (policy.algorithm === 'quota') {
    return `quota-${typeof policy.limit === 'function' ? 'fn' : policy.limit}-${policy.period}`;
  }
  const window = typeof policy.window === 'number' ? `${policy.window}ms` : String(policy.window);
  const fn = (value: unknown) => (typeof value === 'function' ? 'fn' : String(value));
  const burst = policy.burst === undefined ? '' : `-b${fn(policy.burst)}`;
  return `${policy.algorithm}-${fn(policy.limit)}-${window}${burst}`;
}

/**
 * Checks a policy and returns it with defaults applied and the window in milliseconds.
 * Throws RateLimitPolicyError naming the policy, `where` (e.g. `AuthController.login`) and the field.
 * @example validatePolicy({ algorithm: 'gcra', limit: 10, window: '1s' }).windowMs === 1000
 */
export function validatePolicy(policy: RateLimitPolicy, where?: string): ResolvedPolicy {
  if (policy === null || typeof policy !== 'object') {
    throw new RateLimitPolicyError(`expected a policy object, got ${describe(policy)}`, { where });
  }
  const name = policy.name ?? defaultPolicyName(policy);
  const fail = (field: string, problem: string): never => {
    throw new RateLimitPolicyError(problem, { policy: name, field, where });
  };

  if (policy.name !== undefined && (typeof policy.name !== 'string' || !NAME.test(policy.name))) {
    fail('name', `must be 1-64 characters of A-Z a-z 0-9 _ . -, got ${describe(policy.name)}`);
  }
  const quota = policy.algorithm === 'quota';
  if (!ALGORITHMS.includes(policy.algorithm)) {
    fail('algorithm', `must be one of ${ALGORITHMS.join(', ')}, got ${describe(policy.algorithm)}`);
  }
  // the fields of the algorithm's kind (a quota's are period and timeZone)
  const unknown = unknownField(policy, quota ? QUOTA_FIELDS : WINDOW_FIELDS, THROTTLER_FIELDS);
  if (unknown !== undefined) fail(unknown.field, `is not a policy field ${unknown.hint}`);
  if (policy.algorithm === 'quota') return validateQuota(policy, name, fail);
  const { limit, burst } = policy;
  if (typeof limit !== 'function' && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
    fail('limit', `must be an integer >= 1 or a function of the request, got ${describe(limit)}`);
  }
  const windowMs = parseWindow(policy.window);
  if (windowMs === undefined) {
    fail(
      'window',
      `must be a whole number of milliseconds >= 1 or a duration like '500ms', '10s', '1m', '1h', '1d', got ${describe(policy.window)}`,
    );
  }
  const { anchor } = policy;
  if (anchor !== undefined) {
    if (anchor !== 'clock' && anchor !== 'first-request') {
      fail('anchor', `must be 'clock' or 'first-request', got ${describe(anchor)}`);
    }
    if (policy.algorithm !== 'fixed-window') fail('anchor', `applies only to fixed-window, not to ${policy.algorithm}`);
  }
  const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
  if (burst !== undefined) {
    if (!bucket) fail('burst', `applies only to token-bucket and gcra, not to ${policy.algorithm}`);
    if (typeof burst !== 'function' && (!Number.isSafeInteger(burst) || burst < 1)) {
      fail('burst', `must be an integer >= 1 or a function of the request, got ${describe(burst)}`);
    }
  }
  // A limit or burst that is a function is decided per request (RequestResolver); NaN stands for it here.
  const staticLimit = typeof limit === 'number' ? limit : NaN;
  const staticBurst = typeof burst === 'function' ? NaN : burst;
  const capacity = bucket ? (staticBurst ?? staticLimit) : staticLimit;
  // The algorithms count in units of 1/windowMs of a request so that every step is exact integer math. Their
  // intermediate values reach a few times capacity × windowMs (two windows of a sliding counter seen from a
  // clock that stepped back, a GCRA key seen from behind), and must stay below 2^53 in Lua and TypeScript.
  const problem = checkUnits(Math.max(capacity, staticLimit), windowMs as number);
  if (problem !== undefined) fail('limit', problem);
  if (policy.algorithm === 'gcra') checkGcra(staticLimit, capacity, windowMs as number, fail);
  checkCommon(policy, fail);
  return Object.freeze({
    name,
    id: name,
    algorithm: policy.algorithm,
    limit: staticLimit,
    windowMs: windowMs as number,
    capacity,
    failMode: policy.failMode,
    mode: policy.mode,
    ...blockOf(policy, fail),
    ...(anchor === 'first-request' ? { anchor } : {}),
    source: policy,
  });
}

type Fail = (field: string, problem: string) => never;

function checkCommon(policy: RateLimitPolicy, fail: Fail): void {
  if (policy.scope !== undefined && policy.scope !== 'shared' && policy.scope !== 'route') {
    fail('scope', `must be 'shared' or 'route', got ${describe(policy.scope)}`);
  }
  if (policy.cost !== undefined && typeof policy.cost !== 'function') {
    checkCost(policy.cost, (problem) => fail('cost', problem));
  }
  if (policy.key !== undefined && policy.key !== 'ip' && policy.key !== 'user' && typeof policy.key !== 'function') {
    fail('key', `must be 'ip', 'user' or a function, got ${describe(policy.key)}`);
  }
  if (policy.failMode !== undefined && policy.failMode !== 'open' && policy.failMode !== 'closed') {
    fail('failMode', `must be 'open' or 'closed', got ${describe(policy.failMode)}`);
  }
  if (policy.mode !== undefined && policy.mode !== 'enforce' && policy.mode !== 'shadow') {
    fail('mode', `must be 'enforce' or 'shadow', got ${describe(policy.mode)}`);
  }
  compileList(policy.allow, (problem) => fail('allow', problem));
  compileList(policy.deny, (problem) => fail('deny', problem));
  const { count } = policy;
  if (count !== undefined && policy.algorithm === 'concurrency') {
    fail('count', 'does not apply to concurrency: a lease is given back at the end of every request');
  }
  if (count !== undefined && typeof count !== 'function' && !COUNTS.includes(count)) {
    fail('count', `must be 'all', 'failed', 'succeeded' or a function of the outcome, got ${describe(count)}`);
  }
}

/** The policy's `block` in milliseconds, as a field to spread into the resolved policy. */
function blockOf(policy: RateLimitPolicy, fail: Fail): { blockMs?: number } {
  if (policy.block === undefined) return {};
  const blockMs = parseWindow(policy.block);
  if (blockMs === undefined) {
    fail(
      'block',
      `must be a whole number of milliseconds >= 1 or a duration like '30s', '15m', '1h', got ${describe(policy.block)}`,
    );
  }
  return { blockMs };
}

const COUNTS: readonly unknown[] = ['all', 'failed', 'succeeded'];

/** Nominal period lengths, for headers and bounds; the real periods follow the calendar. */
const PERIOD_MS = { day: 86_400_000, month: 31 * 86_400_000 } as const;

function validateQuota(policy: RateLimitQuotaPolicy, name: string, fail: Fail): ResolvedPolicy {
  if (policy.period !== 'day' && policy.period !== 'month') {
    fail('period', `must be 'day' or 'month', got ${describe(policy.period)}`);
  }
  const timeZone = policy.timeZone ?? 'UTC';
  const badZone = checkTimeZone(timeZone);
  if (badZone !== undefined) fail('timeZone', badZone);
  if (policy.window !== undefined) fail('window', "is not used by quotas: a quota's period is 'day' or 'month'");
  if (policy.burst !== undefined) fail('burst', 'is not used by quotas');
  const { limit } = policy;
  if (typeof limit !== 'function' && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
    fail('limit', `must be an integer >= 1 or a function of the request, got ${describe(limit)}`);
  }
  checkCommon(policy, fail);
  // A limit that is a function is decided per request; NaN here admits nothing if it were ever used as is.
  const staticLimit = typeof limit === 'number' ? limit : NaN;
  return Object.freeze({
    name,
    id: name,
    algorithm: 'quota',
    limit: staticLimit,
    windowMs: PERIOD_MS[policy.period],
    capacity: staticLimit,
    failMode: policy.failMode,
    mode: policy.mode,
    ...blockOf(policy, fail),
    quota: Object.freeze({ period: policy.period, timeZone }),
    source: policy,
  });
}

/** Why `units` (a limit or burst) per window of `windowMs` cannot be counted exactly, or undefined. NaN passes. */
function checkUnits(units: number, windowMs: number): string | undefined {
  if (!(units * windowMs > MAX_UNITS)) return undefined;
  return `limit (or burst) × window in ms must not exceed 2^51; got ${units} × ${windowMs}`;
}

/**
 * GCRA counts in µs (gcra.ts): its window, and its burst × emission interval when both are static, must stay
 * within MAX_LEAD_US (about 71 years) for its integers to stay exact.
 */
function checkGcra(limit: number, burst: number, windowMs: number, fail: Fail): void {
  if (1000 * windowMs > MAX_LEAD_US) {
    fail('window', `must not exceed ${MAX_LEAD_US / 1000} ms (about 71 years) for gcra, got ${windowMs}`);
  }
  if (Number.isNaN(limit) || Number.isNaN(burst)) return;
  const leadUs = burst * emissionUs(limit, windowMs);
  if (leadUs > MAX_LEAD_US) {
    fail(
      'burst',
      `burst × emission interval (window / limit) must not exceed 2^51 µs (about 71 years) for gcra; got ${burst} × ` +
        `${emissionUs(limit, windowMs)} µs: lower burst or window, or raise limit`,
    );
  }
}

/** A limit or burst returned for one request, checked like a static one (an integer >= 1 within the bounds). */
export function checkRequestLimit(value: unknown, windowMs: number, fail: (problem: string) => never): number {
  const limit = checkQuotaLimit(value, fail);
  const problem = checkUnits(limit, windowMs);
  return problem === undefined ? limit : fail(problem);
}

/** A quota's limit for one request, checked like a static one. */
export function checkQuotaLimit(value: unknown, fail: (problem: string) => never): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    return fail(`limit must be an integer >= 1, got ${describe(value)}`);
  }
  return value;
}

/**
 * Reports a cost that is not a non-negative safe integer through `fail`.
 * Costs are whole units (requests, tokens, rows) so that every algorithm stays exact.
 */
export function checkCost(cost: unknown, fail: (problem: string) => never): number {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
    return fail(`cost must be a non-negative integer, got ${describe(cost)}`);
  }
  return cost;
}
