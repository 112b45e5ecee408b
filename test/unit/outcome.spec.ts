import type { ExecutionContext } from '@nestjs/common';

import {
  RateLimitPolicyError,
  type RateLimitOutcome,
  type RateLimitPolicy,
  type ResolvedPolicy,
  validatePolicy,
} from '../../lib/index.js';
import { unitsStillHeld } from '../../lib/algorithms/still-held.js';
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

describe('unitsStillHeld: how much of a charge a refund now may give back', () => {
  const minute = 60_000;
  const start = 100 * minute;
  const policy = (p: RateLimitPolicy) => validatePolicy(p);
  const held = (p: ResolvedPolicy, atMs: number, nowMs: number, resetMs?: number) =>
    unitsStillHeld(p, 3, atMs, nowMs, resetMs);

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: all of it within the window of the charge, none after',
    (algorithm) => {
      const p = policy({ algorithm, limit: 5, window: '1m' });
      expect(held(p, start, start)).toBe(3);
      expect(held(p, start, start + minute - 1)).toBe(3);
      expect(held(p, start, start + minute)).toBe(0);
      expect(held(p, start + minute - 1, start + minute)).toBe(0);
    },
  );

  it("fixed-window from the first request: until the charge's window ends, as its decision said", () => {
    const p = policy({ algorithm: 'fixed-window', anchor: 'first-request', limit: 5, window: '1m' });
    // charged 20 s into the key's window: it ends 40 s later, whatever a clock-aligned window would say
    expect(held(p, start + 20_000, start + 59_999, 40_000)).toBe(3);
    expect(held(p, start + 20_000, start + 60_000, 40_000)).toBe(0);
    expect(held(p, start + 20_000, start + 20_001)).toBe(0);
  });

  it('sliding-window-log: while the entry of the charge is in the window', () => {
    const p = policy({ algorithm: 'sliding-window-log', limit: 5, window: '1m' });
    expect(held(p, start + 30_000, start + 30_000 + minute - 1)).toBe(3);
    expect(held(p, start + 30_000, start + 30_000 + minute)).toBe(0);
  });

  it('quota: within the calendar period of the charge (in its time zone)', () => {
    const p = policy({ name: 'q', algorithm: 'quota', period: 'day', timeZone: 'Europe/Paris', limit: 5 });
    // 2024-06-01T21:59:59.999Z is 23:59:59.999 in Paris (UTC+2): the next millisecond is another day there.
    const lastMs = Date.UTC(2024, 5, 1, 21, 59, 59, 999);
    expect(held(p, Date.UTC(2024, 5, 1, 0, 0), lastMs)).toBe(3);
    expect(held(p, lastMs, lastMs + 1)).toBe(0);
  });

  it.each(['token-bucket', 'gcra'] as const)(
    '%s: what has not had time to refill since the charge, one unit per emission interval (12 s at 5 a minute)',
    (algorithm) => {
      const p = policy({ algorithm, limit: 5, window: '1m' });
      const at = (ms: number) => unitsStillHeld(p, 5, start, start + ms);
      expect(at(0)).toBe(5);
      // a unit refills whole or not at all: one that is part refilled is no longer held
      expect(at(1)).toBe(4);
      expect(at(12_000)).toBe(4);
      expect(at(12_001)).toBe(3);
      expect(at(48_000)).toBe(1);
      expect(at(59_999)).toBe(0);
      expect(at(10 * minute)).toBe(0);
      // a clock that stepped back has let nothing refill
      expect(unitsStillHeld(p, 5, start, start - 1000)).toBe(5);
    },
  );

  it('gcra: at the emission interval rounded up to a whole µs, as GCRA refills (3 a second: 333,334 µs)', () => {
    const p = policy({ algorithm: 'gcra', limit: 3, window: 1000 });
    // 1,000,002 µs for the three: two whole units are still missing until 666.668 ms after the charge
    expect(unitsStillHeld(p, 3, start, start + 333)).toBe(2);
    expect(unitsStillHeld(p, 3, start, start + 666)).toBe(1);
    expect(unitsStillHeld(p, 3, start, start + 667)).toBe(0);
  });
});
