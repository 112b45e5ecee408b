import fc from 'fast-check';

import { ALGORITHM_STEPS, kernelOf } from '../../../lib/algorithms/index.js';
import type { GcraState } from '../../../lib/algorithms/gcra/gcra.js';
import { MAX_LEAD_US } from '../../../lib/policy/emission.js';
import { validatePolicy, type ResolvedPolicy } from '../../../lib/index.js';
import { GcraReference, type ReferenceState } from '../../support/gcra-reference.js';
import { TEST_START_MS } from '../../support/time.js';

/**
 * lib's GCRA step against the reference written from the definition (test/support/gcra-reference.ts): the
 * same decisions, the same numbers and the same TAT, on random sequences of consumes, refunds and (per plan)
 * limit changes, with a clock that jumps back and forth.
 */

const reference = new GcraReference();

interface Shape {
  readonly windowMs: number;
  /** The limits the key sees (one for a static policy; a per-plan policy changes between them). */
  readonly limits: readonly number[];
  readonly burst: number | undefined;
}

/** Small limits and windows, whose intervals are rarely whole in µs. */
const small = fc.record({
  windowMs: fc.integer({ min: 1, max: 5000 }),
  limits: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 3 }),
  burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
});

/** burst × T close to MAX_LEAD_US: leads near 2^51 µs, and conversions whose products leave 2^53. */
const large = fc
  .record({
    limit: fc.integer({ min: 1, max: 7 }),
    extra: fc.integer({ min: 0, max: 3 }),
    below: fc.integer({ min: 0, max: 1000 }),
    factors: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 3 }),
  })
  .map(({ limit, extra, below, factors }) => ({
    windowMs: Math.floor((MAX_LEAD_US * limit) / (1000 * (limit + extra))) - below,
    limits: factors.map((f) => f * limit),
    burst: limit + extra,
  }));

const opArb = fc.record({
  dt: fc.oneof(
    fc.integer({ min: 0, max: 50 }),
    fc.integer({ min: -3000, max: 5000 }),
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  ),
  kind: fc.constantFrom('consume', 'consume', 'consume', 'refund'),
  cost: fc.integer({ min: 0, max: 17 }),
  plan: fc.nat(),
});

/** The policy of each limit, made as the engine makes a request's variant (LimitVariants). */
function policiesOf({ windowMs, limits, burst }: Shape, perPlan: boolean): ResolvedPolicy[] {
  const base = validatePolicy({
    name: 'g',
    algorithm: 'gcra',
    limit: perPlan ? () => 1 : (limits[0] as number),
    window: windowMs,
    burst,
  });
  return limits.map((limit) => Object.freeze({ ...base, limit, capacity: burst ?? limit }));
}

const asReference = (s: GcraState | undefined, limit: number): ReferenceState | undefined =>
  s === undefined ? undefined : { tatUs: BigInt(s.tatUs), limit: s.limit ?? limit };

describe.each([
  ['a static limit', false],
  ['a per-plan limit', true],
] as const)('GCRA with %s decides exactly as the reference written from the definition', (_, perPlan) => {
  it.each([
    ['small limits and windows', small],
    ['burst × interval near 2^51 µs', large],
  ] as const)('%s', (_name, shapes) => {
    fc.assert(
      fc.property(shapes, fc.array(opArb, { minLength: 1, maxLength: 40 }), (shape, ops) => {
        const policies = policiesOf(shape, perPlan);
        expect(policies.every((p) => kernelOf(p) === (perPlan ? 'gcra-per-plan' : 'gcra'))).toBe(true);
        let now = TEST_START_MS;
        let state: GcraState | undefined;
        let expected: ReferenceState | undefined;
        for (const op of ops) {
          // the design's range of clocks: now in µs below 2^52 (until 2112)
          now = Math.min(Math.max(now + op.dt, 1_000_000_000_000), 4_400_000_000_000);
          let policy = policies[perPlan ? op.plan % policies.length : 0] as ResolvedPolicy;
          // a per-plan key also sees calls with a numeric limit under its name (RateLimitService): such a call
          // keeps the limit in a state that still counts, so the lead stays convertible (a lapsed state is none:
          // the call writes what it writes on a new key, whether or not a store still holds the lapsed one)
          if (perPlan && state?.limit !== undefined && state.tatUs > now * 1000 && op.plan % 3 === 0) {
            policy = validatePolicy({
              name: 'g',
              algorithm: 'gcra',
              limit: policy.limit,
              window: shape.windowMs,
              burst: shape.burst,
            });
          }
          const lib = ALGORITHM_STEPS[kernelOf(policy)];
          const p = { limit: policy.limit, windowMs: policy.windowMs, burst: policy.capacity };
          if (op.kind === 'refund') {
            state = lib.refund(state, policy, now, op.cost) as GcraState | undefined;
            expected = reference.refund(expected, p, now, op.cost);
          } else {
            const got = lib.step(state, policy, now, op.cost);
            const want = reference.decide(expected, p, now, op.cost);
            expect({ ...got, state: undefined }).toEqual({ ...want.decision, state: undefined });
            state = got.state as GcraState | undefined;
            expected = want.state;
          }
          expect(asReference(state, policy.limit)).toEqual(expected);
          if (state !== undefined) expect(state.limit !== undefined).toBe(perPlan);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('GCRA validation', () => {
  it('refuses a burst × interval beyond 2^51 µs, naming the policy', () => {
    const window = Math.floor(MAX_LEAD_US / 1000 / 10);
    expect(() => validatePolicy({ name: 'slow', algorithm: 'gcra', limit: 1, window, burst: 10 })).not.toThrow();
    expect(() => validatePolicy({ name: 'slow', algorithm: 'gcra', limit: 1, window, burst: 11 })).toThrow(
      /policy "slow".*field "burst".*2\^51 µs/,
    );
    expect(() => validatePolicy({ name: 'long', algorithm: 'gcra', limit: () => 5, window: MAX_LEAD_US })).toThrow(
      /policy "long".*field "window"/,
    );
    // the same numbers are fine for the token bucket, which counts in ms
    expect(() => validatePolicy({ algorithm: 'token-bucket', limit: 1, window, burst: 11 })).not.toThrow();
  });

  it('gives a per-request limit and burst beyond the bound the largest burst that fits', () => {
    const base = validatePolicy({ name: 'plan', algorithm: 'gcra', limit: () => 1, window: 1_000_000_000 });
    const policy: ResolvedPolicy = Object.freeze({ ...base, limit: 1, capacity: 2 ** 20 });
    const fits = Math.floor(MAX_LEAD_US / 1e12);
    const full = ALGORITHM_STEPS['gcra-per-plan'].step(undefined, policy, TEST_START_MS, 0);
    expect(full.remaining).toBe(fits);
    expect(ALGORITHM_STEPS['gcra-per-plan'].step(undefined, policy, TEST_START_MS, fits + 1).retryAfterMs).toBe(
      Infinity,
    );
  });
});
