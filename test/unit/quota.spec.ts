import { quotaPeriodAt } from '../../lib/algorithms/quota/quota-period.js';
import { RateLimitPolicyError, validatePolicy, type RateLimitPolicy } from '../../lib/index.js';
import { limiter } from '../support/harness.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('quota periods', () => {
  it.each([
    ['month', 'UTC', '2026-03-15T12:00:00Z', '2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z'],
    ['month', 'Europe/Paris', '2026-01-31T23:30:00Z', '2026-01-31T23:00:00.000Z', '2026-02-28T23:00:00.000Z'],
    ['month', 'Europe/Paris', '2026-01-31T22:59:59.999Z', '2025-12-31T23:00:00.000Z', '2026-01-31T23:00:00.000Z'],
    ['day', 'Europe/Paris', '2026-03-29T12:00:00Z', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'], // 23 h
    ['day', 'America/New_York', '2026-11-01T12:00:00Z', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z'], // 25 h
    ['day', 'America/Santiago', '2026-09-06T12:00:00Z', '2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z'], // no midnight
    ['day', 'Asia/Kolkata', '2026-06-01T18:29:59.999Z', '2026-05-31T18:30:00.000Z', '2026-06-01T18:30:00.000Z'],
    ['day', 'Asia/Kolkata', '2026-06-01T18:30:00Z', '2026-06-01T18:30:00.000Z', '2026-06-02T18:30:00.000Z'],
  ] as const)('%s in %s at %s is [%s, %s)', (period, timeZone, at, start, end) => {
    const { startMs, endMs } = quotaPeriodAt(period, timeZone, Date.parse(at));
    expect([iso(startMs), iso(endMs)]).toEqual([start, end]);
  });
});

describe('quota policies', () => {
  it('counts per calendar period of the time zone, exactly at its edges (fake clock)', async () => {
    // 23:59:59.999 on Jan 31st in Paris, then midnight: a new month there, still January in UTC
    const l = limiter(
      { algorithm: 'quota', period: 'month', timeZone: 'Europe/Paris', limit: 3 },
      Date.parse('2026-01-31T22:59:59.998Z'),
    );
    const spent = await l.consumeTimes(4);
    expect(spent.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(spent[3]).toMatchObject({ remaining: 0, retryAfterMs: 2, resetMs: 2 });
    l.clock.advance(1);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect(await l.consume()).toMatchObject({ allowed: true, remaining: 2, resetMs: 28 * 86_400_000 });
    expect(l.policy).toMatchObject({ name: 'quota-3-month', algorithm: 'quota', limit: 3 });
  });

  it('rejects bad quota fields, naming them', () => {
    const base = { name: 'q', algorithm: 'quota', period: 'month', limit: 10 };
    const bad: [Record<string, unknown>, string, RegExp][] = [
      [{ period: 'week' }, 'period', /'day' or 'month', got "week"/],
      [{ timeZone: 'Mars/Olympus' }, 'timeZone', /IANA time zone .*got "Mars\/Olympus"/],
      [{ limit: 0 }, 'limit', /integer >= 1 or a function/],
      [{ window: '1m' }, 'window', /not used by quotas/],
      [{ burst: 5 }, 'burst', /not used by quotas/],
    ];
    for (const [patch, field, problem] of bad) {
      let error: unknown;
      try {
        validatePolicy({ ...base, ...patch } as unknown as RateLimitPolicy, 'PlanController.ai');
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(RateLimitPolicyError);
      expect((error as RateLimitPolicyError).field).toBe(field);
      expect((error as Error).message).toMatch(problem);
    }
    expect(validatePolicy({ algorithm: 'quota', period: 'day', limit: () => 5 }).name).toBe('quota-fn-day');
  });
});
