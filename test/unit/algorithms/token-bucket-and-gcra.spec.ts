import { limiter } from '../../support/harness.js';

describe.each(['token-bucket', 'gcra'] as const)('%s', (algorithm) => {
  it('allows a burst of `burst`, then refills at limit per window', async () => {
    const l = limiter({ algorithm, limit: 10, window: '1s', burst: 20 });
    const burst = await l.consumeTimes(21);
    expect(burst.filter((d) => d.allowed)).toHaveLength(20);
    expect(burst[19]).toMatchObject({ remaining: 0, limit: 20, resetMs: 2000 });
    expect(burst[20]).toMatchObject({ allowed: false, retryAfterMs: 100 });
    l.clock.advance(99);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect((await l.consume()).allowed).toBe(true);
  });

  it('is exact when the emission interval is not a whole number of milliseconds', async () => {
    const l = limiter({ algorithm, limit: 3, window: 1000 });
    await l.consumeTimes(3);
    const denied = await l.consume();
    expect(denied.retryAfterMs).toBe(334); // 1000 / 3 = 333.33…
    l.clock.advance(333);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect((await l.consume()).allowed).toBe(true);
    // Three intervals are exactly one second: the fractions add up without drift.
    l.clock.advance(1000 - 334);
    expect((await l.consume(2)).allowed).toBe(true);
  });

  it('weighs costs and says when a cost is larger than the burst', async () => {
    const l = limiter({ algorithm, limit: 100, window: '1m', burst: 50 });
    expect((await l.consume(40)).remaining).toBe(10);
    const denied = await l.consume(20);
    expect(denied).toMatchObject({ allowed: false, remaining: 10, retryAfterMs: 6000 });
    const never = await l.consume(51);
    expect(never.retryAfterMs).toBe(Infinity);
    expect(never.message).toMatch(/capacity 50/);
  });

  it('refunds, never above capacity', async () => {
    const l = limiter({ algorithm, limit: 10, window: '1s' });
    await l.consume(8);
    expect((await l.refund(3)).remaining).toBe(5);
    expect(await l.refund(100)).toMatchObject({ remaining: 10, resetMs: 0 });
    expect(l.store.size).toBe(0);
  });
});
