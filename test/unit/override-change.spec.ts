import { checkOverrideChange } from '../../lib/policy/override.js';
import { RateLimitPolicyError } from '../../lib/policy/policy.errors.js';
import { validatePolicy } from '../../lib/policy/validate-policy.js';
import { parseStoredOverride, type StoredOverride } from '../../lib/stores/overrides.js';

const fixed = validatePolicy({ name: 'fw', algorithm: 'fixed-window', limit: 10, window: '1m' }, 'Spec.fw');
const gcra = validatePolicy({ name: 'g', algorithm: 'gcra', limit: 10, window: '1s' }, 'Spec.g');
const quota = validatePolicy({ name: 'q', algorithm: 'quota', limit: 100, period: 'month' }, 'Spec.q');

const problem = (policy: typeof fixed, change: unknown): { field?: string; message: string } => {
  try {
    checkOverrideChange(policy, change);
  } catch (error) {
    expect(error).toBeInstanceOf(RateLimitPolicyError);
    return { field: (error as RateLimitPolicyError).field, message: (error as Error).message };
  }
  throw new Error('no error');
};

describe('checkOverrideChange', () => {
  it('takes a limit, a burst where the algorithm has one, a ttl, a reason and a dry run', () => {
    expect(checkOverrideChange(fixed, { limit: 20 })).toEqual({ limit: 20, shadow: false });
    expect(checkOverrideChange(gcra, { burst: 3, ttl: '2h', reason: 'launch', shadow: true })).toEqual({
      burst: 3,
      ttlMs: 7_200_000,
      reason: 'launch',
      shadow: true,
    });
    expect(checkOverrideChange(fixed, { limit: 5, ttl: 1500 })).toMatchObject({ ttlMs: 1500 });
    expect(checkOverrideChange(quota, { limit: 1_000_000 })).toMatchObject({ limit: 1_000_000 });
  });

  it.each([
    ['a change that is not an object', fixed, 5, 'change', /must be an object/],
    ['an unknown field', fixed, { limit: 2, window: '1h' }, 'window', /no field "window"/],
    ['a burst of a fixed window', fixed, { burst: 2 }, 'burst', /fixed-window policy has no burst/],
    ['neither limit nor burst', gcra, { reason: 'x' }, 'limit', /needs a limit or a burst/],
    ['a limit of 0', fixed, { limit: 0 }, 'limit', /limit must be an integer >= 1, got 0/],
    ['a fractional burst', gcra, { burst: 1.5 }, 'burst', /burst must be an integer >= 1, got 1.5/],
    ['a limit past what GCRA can time', gcra, { limit: 10_000_000 }, 'limit', /./],
    ['a ttl of 0', fixed, { limit: 2, ttl: 0 }, 'ttl', /ttl must be milliseconds >= 1/],
    ['a ttl that is no duration', fixed, { limit: 2, ttl: '2 hours' }, 'ttl', /'2h'/],
    ['a reason that is not a string', fixed, { limit: 2, reason: 7 }, 'reason', /reason must be a string/],
    ['a long reason', fixed, { limit: 2, reason: 'x'.repeat(501) }, 'reason', /at most 500 characters/],
    ['a shadow that is not a boolean', fixed, { limit: 2, shadow: 'yes' }, 'shadow', /true or false/],
  ])('refuses %s, naming the field', (_, policy, change, field, pattern) => {
    const { field: named, message } = problem(policy, change);
    expect(named).toBe(field);
    expect(message).toMatch(pattern);
    expect(message).toContain('RateLimitService.override');
  });
});

describe('parseStoredOverride', () => {
  const stored: StoredOverride = { policy: 'p', identity: 'abc', shape: 'fw1m', limit: 3, shadow: false, setAt: 1 };

  it('reads what the stores write', () => {
    expect(parseStoredOverride(JSON.stringify(stored))).toEqual(stored);
    const full = { ...stored, burst: 4, until: 9, reason: 'r', shadow: true };
    expect(parseStoredOverride(JSON.stringify(full))).toEqual(full);
  });

  it.each([
    ['text that is not JSON', '{'],
    ['JSON that is not an object', '7'],
    ['a limit of 0', JSON.stringify({ ...stored, limit: 0 })],
    ['no shape', JSON.stringify({ ...stored, shape: undefined })],
    ['a setAt that is not a time', JSON.stringify({ ...stored, setAt: 'now' })],
    ['a shadow that is not a boolean', JSON.stringify({ ...stored, shadow: 1 })],
  ])('skips %s', (_, text) => {
    expect(parseStoredOverride(text)).toBeUndefined();
  });
});
