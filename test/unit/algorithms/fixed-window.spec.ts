import { limiter } from '../../support/harness.js';

const MINUTE = 60_000;
const windowStart = 1_700_000_040_000; // a multiple of 60 000: the start of a clock-aligned minute

describe('fixed window', () => {
  it('admits the limit per clock-aligned window and tells the exact wait', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 3, window: '1m' }, windowStart + 10_000);
    const decisions = await l.consumeTimes(4);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    expect(decisions[0]?.resetMs).toBe(50_000);
    expect(decisions[3]?.retryAfterMs).toBe(50_000);
    l.clock.advance(49_999);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect(await l.consume()).toMatchObject({ allowed: true, remaining: 2, resetMs: MINUTE });
  });

  it('lets 100 through at the end of one window and 100 more at the start of the next, as it promises', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 100, window: '1m' }, windowStart + MINUTE - 1);
    const end = await l.consumeTimes(101);
    expect(end.filter((d) => d.allowed)).toHaveLength(100);
    expect(end[100]?.retryAfterMs).toBe(1);
    l.clock.advance(1);
    const start = await l.consumeTimes(101);
    expect(start.filter((d) => d.allowed)).toHaveLength(100);
  });

  it('weighs costs, consumes nothing when it denies, and refuses a cost that can never fit', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 100, window: '1m' }, windowStart);
    expect((await l.consume(30)).remaining).toBe(70);
    expect((await l.consume(60)).remaining).toBe(10);
    const denied = await l.consume(11);
    expect(denied).toMatchObject({ allowed: false, remaining: 10 });
    expect((await l.consume(10)).remaining).toBe(0);
    const never = await l.consume(101);
    expect(never.allowed).toBe(false);
    expect(never.retryAfterMs).toBe(Infinity);
    expect(never.message).toMatch(/cost 101 is larger than the capacity 100 .* can never be allowed/);
  });

  it('refunds within the current window, never above the limit', async () => {
    const l = limiter({ algorithm: 'fixed-window', limit: 10, window: '1m' }, windowStart);
    await l.consume(8);
    expect(await l.refund(5)).toMatchObject({ allowed: true, remaining: 7 });
    expect(await l.refund(50)).toMatchObject({ remaining: 10, resetMs: 0 });
    expect(l.store.size).toBe(0);
  });
});
