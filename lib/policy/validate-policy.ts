import { RateLimitPolicyError } from './policy.errors.js';
import { ALGORITHMS, type RateLimitPolicy, type ResolvedPolicy } from './policy.types.js';
import { unknownField } from '../util/unknown-fields.js';
import { describeValue } from './value-checks.js';
import { QUOTA_FIELDS, validateQuota } from './validate-quota.js';
import { validateWindowPolicy, WINDOW_FIELDS } from './validate-window.js';

/**
 * The field of a throttler of @nestjs/throttler that a ported policy most often keeps, and what it is here
 * (docs/migration-from-throttler.md): its closest policy field by spelling is no help.
 */
const THROTTLER_FIELDS = {
  ttl: `did you mean "window"? @nestjs/throttler's ttl is a policy's window: ms, or a duration like '1m'`,
};

/** Policy names appear inside Redis keys and quoted header items, so they keep to a safe alphabet. */
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

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
    throw new RateLimitPolicyError(`expected a policy object, got ${describeValue(policy)}`, { where });
  }
  const name = policy.name ?? defaultPolicyName(policy);
  const fail = (field: string, problem: string): never => {
    throw new RateLimitPolicyError(problem, { policy: name, field, where });
  };

  if (policy.name !== undefined && (typeof policy.name !== 'string' || !NAME.test(policy.name))) {
    fail('name', `must be 1-64 characters of A-Z a-z 0-9 _ . -, got ${describeValue(policy.name)}`);
  }
  const quota = policy.algorithm === 'quota';
  if (!ALGORITHMS.includes(policy.algorithm)) {
    fail('algorithm', `must be one of ${ALGORITHMS.join(', ')}, got ${describeValue(policy.algorithm)}`);
  }
  // the fields of the algorithm's kind (a quota's are period and timeZone)
  const unknown = unknownField(policy, quota ? QUOTA_FIELDS : WINDOW_FIELDS, THROTTLER_FIELDS);
  if (unknown !== undefined) fail(unknown.field, `is not a policy field ${unknown.hint}`);
  return policy.algorithm === 'quota' ? validateQuota(policy, name, fail) : validateWindowPolicy(policy, name, fail);
}
