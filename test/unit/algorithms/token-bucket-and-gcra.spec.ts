import fc from 'fast-check';

import { ALGORITHM_STEPS } from '../../../lib/algorithms/index.js';
import { validatePolicy } from '../../../lib/index.js';
import { limiter } from '../../support/harness.js';
import { TEST_START_MS } from '../../support/time.js';

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

describe('where the token bucket and GCRA differ', () => {
  it('the token bucket is exact when the interval is not a whole number of milliseconds', async () => {
    const l = limiter({ algorithm: 'token-bucket', limit: 3, window: 1000 });
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

  it('GCRA rounds its interval up to a whole µs: 333 334 µs for 3 per second, never faster than the limit', async () => {
    const l = limiter({ algorithm: 'gcra', limit: 3, window: 1000 });
    await l.consumeTimes(3); // TAT = now + 1 000 002 µs
    const denied = await l.consume();
    expect(denied.retryAfterMs).toBe(334); // 333 334 µs
    l.clock.advance(333);
    expect((await l.consume()).allowed).toBe(false);
    l.clock.advance(1);
    expect((await l.consume()).allowed).toBe(true); // TAT = start + 1 333 336 µs
    l.clock.advance(1000 - 334);
    // the token bucket would allow 2 here; the 6 µs GCRA's rounding added take 1 ms to pass
    expect(await l.consume(2)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    l.clock.advance(1);
    expect((await l.consume(2)).allowed).toBe(true);
  });

  // Saturating sequences on short windows too, where a µs of rounding per interval the wrong way over-admits.
  const policies = fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 5000 })),
      burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
    })
    .map((p) => validatePolicy({ ...p, algorithm: 'gcra' }));
  const requests = fc.oneof(
    fc.array(
      fc.record({
        dt: fc.oneof({ arbitrary: fc.constant(0), weight: 9 }, { arbitrary: fc.constant(1), weight: 1 }),
        cost: fc.integer({ min: 1, max: 16 }),
      }),
      {
        minLength: 500,
        maxLength: 2000,
      },
    ),
    fc.array(fc.record({ dt: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 0, max: 16 }) }), {
      minLength: 1,
      maxLength: 60,
    }),
  );

  it("GCRA never admits more than the token bucket's bound: in any span of d ms, at most burst + d × limit / window", () => {
    fc.assert(
      fc.property(policies, requests, (policy, sequence) => {
        const { windowMs: w, limit, capacity } = policy;
        let now = TEST_START_MS;
        let state: unknown;
        // units admitted in [t_i, t_j] = U_j − U_(i−1); the bound holds for every i <= j iff
        // U_j·w − t_j·limit <= capacity·w + min over i <= j of (U_(i−1)·w − t_i·limit)
        let units = 0;
        let least = Infinity;
        for (const { dt, cost } of sequence) {
          now += dt;
          const r = ALGORITHM_STEPS.gcra.step(state, policy, now, cost);
          if (!r.allowed || cost === 0) continue;
          state = r.state;
          const t = now - TEST_START_MS;
          least = Math.min(least, units * w - t * limit);
          units += cost;
          expect(units * w - t * limit).toBeLessThanOrEqual(capacity * w + least);
        }
      }),
      { numRuns: 200 },
    );
  });
});
