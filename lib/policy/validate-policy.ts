import { RateLimitPolicyError } from './policy.errors.js';
import { ALGORITHMS, type RateLimitPolicy, type ResolvedPolicy } from './policy.types.js';
import { parseWindow } from './window.js';

/** Policy names appear inside Redis keys and quoted header items, so they keep to a safe alphabet. */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  return String(value);
}

/** The name a policy gets when it has none, e.g. `sliding-window-counter-100-1m`. */
export function defaultPolicyName(policy: RateLimitPolicy): string {
  const window = typeof policy.window === 'number' ? `${policy.window}ms` : String(policy.window);
  const burst = policy.burst === undefined ? '' : `-b${policy.burst}`;
  return `${policy.algorithm}-${policy.limit}-${window}${burst}`;
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
  if (!ALGORITHMS.includes(policy.algorithm)) {
    fail('algorithm', `must be one of ${ALGORITHMS.join(', ')}, got ${describe(policy.algorithm)}`);
  }
  const { limit } = policy;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    fail('limit', `must be an integer >= 1, got ${describe(limit)}`);
  }
  const windowMs = parseWindow(policy.window);
  if (windowMs === undefined) {
    fail(
      'window',
      `must be a whole number of milliseconds >= 1 or a duration like '500ms', '10s', '1m', '1h', '1d', got ${describe(policy.window)}`,
    );
  }
  const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
  if (policy.burst !== undefined) {
    if (!bucket) fail('burst', `applies only to token-bucket and gcra, not to ${policy.algorithm}`);
    if (!Number.isSafeInteger(policy.burst) || policy.burst < 1) {
      fail('burst', `must be an integer >= 1, got ${describe(policy.burst)}`);
    }
  }
  const capacity = bucket ? (policy.burst ?? limit) : limit;
  // The algorithms count in units of 1/windowMs of a request so that every step is exact integer math.
  if (Math.max(capacity, limit) * (windowMs as number) > Number.MAX_SAFE_INTEGER) {
    fail('limit', `limit (or burst) × window in ms must not exceed 2^53 - 1; got ${capacity} × ${windowMs}`);
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
  return Object.freeze({
    name,
    id: name,
    algorithm: policy.algorithm,
    limit,
    windowMs: windowMs as number,
    capacity,
    failMode: policy.failMode,
    source: policy,
  });
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
