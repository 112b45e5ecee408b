import { limiter } from '../../support/harness.js';
import { TEST_START_MS } from '../../support/time.js';

const start = TEST_START_MS; // a multiple of 10 000

describe('sliding window counter', () => {
  it('estimates current + previous × (1 − elapsed / window)', async () => {
    const l = limiter({ algorithm: 'sliding-window-counter', limit: 10, window: '10s' }, start);
    await l.consume(10);
    l.clock.set(start + 15_000); // previous = 10, half of the window elapsed: estimate 5
    expect(await l.peek()).toMatchObject({ allowed: true, remaining: 5 });
    await l.consume(2); // estimate 7
    expect(await l.peek()).toMatchObject({ remaining: 3 });
    expect((await l.consume(3)).allowed).toBe(true);
    expect((await l.consume(1)).allowed).toBe(false);
  });

  it('retries exactly when the previous window has decayed enough', async () => {
    const l = limiter({ algorithm: 'sliding-window-counter', limit: 10, window: '10s' }, start);
    await l.consume(10);
    l.clock.set(start + 10_000); // estimate = 10 × 1: full
    const denied = await l.consume();
    // 10 × (1 − e / 10 000) + 1 <= 10 first at e = 1000
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    l.clock.advance(999);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect((await l.consume()).allowed).toBe(true);
  });

  it('waits for the next window when the current one alone is full', async () => {
    const l = limiter({ algorithm: 'sliding-window-counter', limit: 4, window: 1000 }, start + 200);
    await l.consume(4);
    const denied = await l.consume(2);
    // next window: 4 × (1 − e / 1000) + 2 <= 4 first at e = 500, i.e. 800 + 500 ms from now
    expect(denied.retryAfterMs).toBe(1300);
    l.clock.advance(1299);
    expect((await l.consume(2)).allowed).toBe(false);
    l.clock.advance(1);
    expect((await l.consume(2)).allowed).toBe(true);
  });

  it('refunds the current window first, and forgets everything after two windows', async () => {
    const l = limiter({ algorithm: 'sliding-window-counter', limit: 10, window: '10s' }, start);
    await l.consume(6);
    expect((await l.refund(4)).remaining).toBe(8);
    expect((await l.refund(100)).remaining).toBe(10);
    await l.consume(10);
    expect((await l.consume()).resetMs).toBe(20_000);
    l.clock.advance(20_000);
    expect(await l.peek()).toMatchObject({ remaining: 10, resetMs: 0 });
  });
});
