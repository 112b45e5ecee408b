import fc from 'fast-check';

import { ALGORITHM_STEPS } from '../../../lib/algorithms/index.js';
import { validatePolicy, type RateLimitWindowPolicy, type ResolvedPolicy } from '../../../lib/index.js';
import { ALGORITHMS, type RateLimitAlgorithm } from '../../../lib/policy/policy.types.js';
import { policyOf } from '../../support/policies.js';
import { TEST_START_MS } from '../../support/time.js';

const policyArb = (algorithm: RateLimitAlgorithm) =>
  fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.integer({ min: 1, max: 5000 }),
      burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
      period: fc.constantFrom('day' as const, 'month' as const),
      timeZone: fc.constantFrom('UTC', 'Asia/Kolkata'),
    })
    .map(({ burst, ...fields }) => {
      const policy = policyOf(algorithm, fields);
      const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
      return validatePolicy(bucket ? { ...(policy as RateLimitWindowPolicy), burst } : policy);
    });

const steps = fc.array(
  fc.record({ dt: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 0, max: 16 }), refund: fc.boolean() }),
  { minLength: 1, maxLength: 60 },
);

describe.each(ALGORITHMS)('%s, on random sequences', (algorithm) => {
  it('is denied at now + retryAfterMs − 1 and allowed at now + retryAfterMs, and a denial consumes nothing', () => {
    fc.assert(
      fc.property(policyArb(algorithm), steps, fc.integer({ min: 0, max: 1e7 }), (policy, sequence, offset) => {
        const alg = ALGORITHM_STEPS[policy.algorithm];
        let now = TEST_START_MS + offset;
        let state: unknown;
        for (const { dt, cost, refund } of sequence) {
          now += dt;
          if (refund) {
            state = alg.refund(state, policy, now, cost);
            continue;
          }
          const r = alg.step(state, policy, now, cost);
          expect(r.remaining).toBeGreaterThanOrEqual(0);
          expect(r.remaining).toBeLessThanOrEqual(policy.capacity);
          expect(r.resetMs).toBeGreaterThanOrEqual(0);
          if (r.allowed) {
            expect(r.retryAfterMs).toBe(0);
            state = r.state;
            continue;
          }
          expect(r.state).toBe(state);
          if (cost > policy.capacity) {
            expect(r.retryAfterMs).toBe(Infinity);
            continue;
          }
          expect(r.retryAfterMs).toBeGreaterThanOrEqual(1);
          expect(alg.step(state, policy, now + r.retryAfterMs - 1, cost).allowed).toBe(false);
          expect(alg.step(state, policy, now + r.retryAfterMs, cost).allowed).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('returns to full capacity after resetMs', () => {
    fc.assert(
      fc.property(policyArb(algorithm), steps, (policy: ResolvedPolicy, sequence) => {
        const alg = ALGORITHM_STEPS[policy.algorithm];
        let now = TEST_START_MS;
        let state: unknown;
        let resetMs = 0;
        for (const { dt, cost } of sequence) {
          now += dt;
          const r = alg.step(state, policy, now, cost);
          if (r.allowed) state = r.state;
          resetMs = r.resetMs;
        }
        expect(alg.step(state, policy, now + resetMs, 0).remaining).toBe(policy.capacity);
      }),
      { numRuns: 200 },
    );
  });
});

it('GCRA decides exactly like a token bucket of the same capacity and rate when its interval is whole in µs', () => {
  fc.assert(
    fc.property(policyArb('token-bucket'), steps, (bucket, sequence) => {
      // GCRA's interval is ceil(1000 × windowMs / limit) µs: the token bucket's exact rate when limit divides
      fc.pre((1000 * bucket.windowMs) % bucket.limit === 0);
      const cell = validatePolicy({ ...(bucket.source as RateLimitWindowPolicy), algorithm: 'gcra' });
      let now = TEST_START_MS;
      let tb: unknown;
      let g: unknown;
      for (const { dt, cost, refund } of sequence) {
        now += dt;
        if (refund) {
          tb = ALGORITHM_STEPS['token-bucket'].refund(tb, bucket, now, cost);
          g = ALGORITHM_STEPS.gcra.refund(g, cell, now, cost);
        }
        const a = ALGORITHM_STEPS['token-bucket'].step(tb, bucket, now, cost);
        const b = ALGORITHM_STEPS.gcra.step(g, cell, now, cost);
        expect({ ...b, state: undefined }).toEqual({ ...a, state: undefined });
        tb = a.state;
        g = b.state;
      }
    }),
    { numRuns: 500 },
  );
});
