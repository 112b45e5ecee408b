import { limiter } from '../../support/harness.js';
import { alignedStart } from '../../support/time.js';

const MINUTE = 60_000;
const windowStart = alignedStart(MINUTE) + MINUTE; // the start of a clock-aligned minute

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

  describe("anchor: 'first-request' (windows from a key's first request, as throttler's Redis storage counts)", () => {
    const FROM_FIRST = { algorithm: 'fixed-window', anchor: 'first-request', limit: 3, window: '1m' } as const;

    it('starts the window at the first request and tells the exact wait from there', async () => {
      // 10 s into a clock-aligned minute: a clock-aligned window would end 50 s later, this one 60 s later
      const l = limiter(FROM_FIRST, windowStart + 10_000);
      const first = await l.consume();
      expect(first).toMatchObject({ allowed: true, remaining: 2, resetMs: MINUTE });
      l.clock.advance(30_000);
      const rest = await l.consumeTimes(3);
      expect(rest.map((d) => d.allowed)).toEqual([true, true, false]);
      expect(rest[2]?.retryAfterMs).toBe(30_000);
      l.clock.advance(29_999);
      expect((await l.consume()).retryAfterMs).toBe(1);
      // the next window starts at the first request after this one ended, not at the end itself
      l.clock.advance(5_001);
      expect(await l.consume()).toMatchObject({ allowed: true, remaining: 2, resetMs: MINUTE });
      l.clock.advance(59_999);
      expect((await l.consumeTimes(3)).map((d) => d.allowed)).toEqual([true, true, false]);
    });

    it('a denial or a peek starts no window', async () => {
      const l = limiter({ ...FROM_FIRST, limit: 2 }, windowStart);
      expect((await l.consume(3)).retryAfterMs).toBe(Infinity);
      expect(await l.peek()).toMatchObject({ allowed: true, remaining: 2, resetMs: 0 });
      expect(l.store.size).toBe(0);
      l.clock.advance(45_000);
      expect(await l.consume()).toMatchObject({ allowed: true, resetMs: MINUTE });
    });

    it('refunds within the window of the key, never into the next', async () => {
      const l = limiter(FROM_FIRST, windowStart);
      await l.consume(3);
      expect(await l.refund(1)).toMatchObject({ remaining: 1 });
      l.clock.advance(MINUTE);
      expect(await l.refund(3)).toMatchObject({ remaining: 3, resetMs: 0 });
      expect(l.store.size).toBe(0);
    });

    it('counts against a window that began later on the clock of an instance ahead', async () => {
      const l = limiter(FROM_FIRST, windowStart + 5_000);
      await l.consume(2);
      // this instance is 5 s behind the one that started the window
      l.clock.set(windowStart);
      const behind = await l.consumeTimes(2);
      expect(behind.map((d) => d.allowed)).toEqual([true, false]);
      // The window ends 65 s from this clock, but no answer asks for more than the policy's own longest wait,
      // a window (issue 41: lib/policy/max-wait.ts); a retry at 60 s finds the window still counted, and waits 5 s.
      expect(behind[1]?.retryAfterMs).toBe(MINUTE);
      l.clock.advance(MINUTE);
      expect(await l.consume()).toMatchObject({ allowed: false, retryAfterMs: 5_000 });
    });

    it('is refused on other algorithms, and with an anchor it does not know', async () => {
      expect(() => limiter({ ...FROM_FIRST, algorithm: 'sliding-window-counter' }, 0)).toThrow(
        /field "anchor": applies only to fixed-window, not to sliding-window-counter/,
      );
      expect(() => limiter({ ...FROM_FIRST, anchor: 'midnight' as never }, 0)).toThrow(
        /field "anchor": must be 'clock' or 'first-request', got "midnight"/,
      );
    });
  });
});
