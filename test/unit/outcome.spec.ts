import type { ExecutionContext } from '@nestjs/common';

import { RateLimitPolicyError, type RateLimitOutcome, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';
import { stillHeld } from '../../lib/algorithms/still-held.js';
import { counts, succeeded } from '../../lib/limiter/outcome.js';

/** The outcomes' context is only handed to count functions; these tests never read it. */
const context = {} as ExecutionContext;
const outcome = (fields: { status?: number; error?: unknown } = {}): RateLimitOutcome => ({ ...fields, context });

describe('validatePolicy: count', () => {
  const base: RateLimitPolicy = { name: 'login', algorithm: 'sliding-window-log', limit: 5, window: '15m' };

  it.each(['all', 'failed', 'succeeded', () => true])('accepts %p', (count) => {
    expect(() => validatePolicy({ ...base, count } as RateLimitPolicy)).not.toThrow();
    expect(() =>
      validatePolicy({ name: 'q', algorithm: 'quota', period: 'day', limit: 5, count } as RateLimitPolicy),
    ).not.toThrow();
  });

  it.each([
    ['failures', '"failures"'],
    [true, 'true'],
    [0, '0'],
    [null, 'null'],
  ])('rejects %p, naming the policy, the place and the field', (count, shown) => {
    let error: unknown;
    try {
      validatePolicy({ ...base, count } as unknown as RateLimitPolicy, 'AuthController.login');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitPolicyError);
    expect((error as RateLimitPolicyError).message).toBe(
      'Invalid rate-limit policy "login" (declared on AuthController.login), field "count": ' +
        `must be 'all', 'failed', 'succeeded' or a function of the outcome, got ${shown}`,
    );
  });
});

describe('succeeded and counts', () => {
  const cases: [string, RateLimitOutcome, boolean][] = [
    ['HTTP 200', outcome({ status: 200 }), true],
    ['HTTP 302', outcome({ status: 302 }), true],
    ['HTTP 399', outcome({ status: 399 }), true],
    ['HTTP 400', outcome({ status: 400 }), false],
    ['HTTP 401', outcome({ status: 401 }), false],
    ['HTTP 500', outcome({ status: 500 }), false],
    ['HTTP 200 after an exception (a filter answered 200)', outcome({ status: 200, error: new Error('x') }), false],
    ['no status, no exception (GraphQL, WebSocket, RPC)', outcome(), true],
    ['an exception', outcome({ error: new Error('x') }), false],
    ['`throw undefined`', outcome({ error: undefined }), false],
  ];

  it.each(cases)('%s: succeeded is %p', (_, o, expected) => {
    expect(succeeded(o)).toBe(expected);
    expect(counts('succeeded', o)).toBe(expected);
    expect(counts('failed', o)).toBe(!expected);
  });

  it('a count function decides, and is given the outcome as it is', () => {
    const seen: RateLimitOutcome[] = [];
    const only401 = (o: RateLimitOutcome): boolean => {
      seen.push(o);
      return o.status === 401;
    };
    expect(counts(only401, outcome({ status: 401 }))).toBe(true);
    expect(counts(only401, outcome({ status: 403 }))).toBe(false);
    expect(seen.map((o) => o.status)).toEqual([401, 403]);
  });

  it('a count function that returns something else than a boolean is an error, as one that throws', () => {
    const returning = (value: unknown) => () => value as boolean;
    expect(() => counts(returning(1), outcome())).toThrow(
      'returned number; it must return true (count) or false (refund)',
    );
    expect(() => counts(returning(undefined), outcome())).toThrow('returned undefined');
    expect(() => counts(returning(null), outcome())).toThrow('returned null');
    expect(() => counts(returning(Promise.resolve(true)), outcome())).toThrow('returned object');
    expect(() =>
      counts(() => {
        throw new Error('bug');
      }, outcome()),
    ).toThrow('bug');
  });
});

describe('stillHeld: whether a refund now would give back units the charge still holds', () => {
  const minute = 60_000;
  const start = 100 * minute;
  const policy = (p: RateLimitPolicy) => validatePolicy(p);

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: within the window of the charge only',
    (algorithm) => {
      const p = policy({ algorithm, limit: 5, window: '1m' });
      expect(stillHeld(p, start, start)).toBe(true);
      expect(stillHeld(p, start, start + minute - 1)).toBe(true);
      expect(stillHeld(p, start, start + minute)).toBe(false);
      expect(stillHeld(p, start + minute - 1, start + minute)).toBe(false);
    },
  );

  it("fixed-window from the first request: until the charge's window ends, as its decision said", () => {
    const p = policy({ algorithm: 'fixed-window', anchor: 'first-request', limit: 5, window: '1m' });
    // charged 20 s into the key's window: it ends 40 s later, whatever a clock-aligned window would say
    expect(stillHeld(p, start + 20_000, start + 59_999, 40_000)).toBe(true);
    expect(stillHeld(p, start + 20_000, start + 60_000, 40_000)).toBe(false);
    expect(stillHeld(p, start + 20_000, start + 20_001)).toBe(false);
  });

  it('sliding-window-log: while the entry of the charge is in the window', () => {
    const p = policy({ algorithm: 'sliding-window-log', limit: 5, window: '1m' });
    expect(stillHeld(p, start + 30_000, start + 30_000 + minute - 1)).toBe(true);
    expect(stillHeld(p, start + 30_000, start + 30_000 + minute)).toBe(false);
  });

  it('quota: within the calendar period of the charge (in its time zone)', () => {
    const p = policy({ name: 'q', algorithm: 'quota', period: 'day', timeZone: 'Europe/Paris', limit: 5 });
    // 2024-06-01T21:59:59.999Z is 23:59:59.999 in Paris (UTC+2): the next millisecond is another day there.
    const lastMs = Date.UTC(2024, 5, 1, 21, 59, 59, 999);
    expect(stillHeld(p, Date.UTC(2024, 5, 1, 0, 0), lastMs)).toBe(true);
    expect(stillHeld(p, lastMs, lastMs + 1)).toBe(false);
  });

  it.each(['token-bucket', 'gcra'] as const)('%s: at any time (a refund never exceeds the capacity)', (algorithm) => {
    const p = policy({ algorithm, limit: 5, window: '1m' });
    expect(stillHeld(p, start, start + 10 * minute)).toBe(true);
  });
});
