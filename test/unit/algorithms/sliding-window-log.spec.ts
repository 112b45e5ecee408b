import { limiter } from '../../support/harness.js';
import { TEST_START_MS } from '../../support/time.js';

describe('sliding window log', () => {
  it('counts the requests of the last window exactly', async () => {
    const l = limiter({ algorithm: 'sliding-window-log', limit: 3, window: 1000 });
    for (const at of [0, 100, 200]) {
      l.clock.set(TEST_START_MS + at);
      expect((await l.consume()).allowed).toBe(true);
    }
    l.clock.set(TEST_START_MS + 300);
    expect(await l.consume()).toMatchObject({ allowed: false, retryAfterMs: 700, resetMs: 900 });
    l.clock.advance(699);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect(await l.consume()).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('weighs costs: the wait is for the entry that frees enough units', async () => {
    const l = limiter({ algorithm: 'sliding-window-log', limit: 3, window: 1000 });
    await l.consume(2);
    l.clock.advance(500);
    await l.consume(1);
    l.clock.advance(100);
    expect(await l.consume(2)).toMatchObject({ allowed: false, retryAfterMs: 400 });
    expect((await l.consume(4)).retryAfterMs).toBe(Infinity);
  });

  it('keeps at most `limit` entries and refunds the newest first', async () => {
    const l = limiter({ algorithm: 'sliding-window-log', limit: 5, window: '1m' });
    for (let i = 0; i < 10; i++) {
      await l.consume();
      l.clock.advance(1);
    }
    const key = [...(l.store as unknown as { entries: Map<string, { state: unknown[] }> }).entries.values()][0];
    expect(key?.state).toHaveLength(5);
    expect((await l.refund(2)).remaining).toBe(2);
    expect((await l.consume(2)).allowed).toBe(true);
  });
});
