import fc from 'fast-check';

import {
  ALGORITHMS,
  validatePolicy,
  type RateLimitDecision,
  type RateLimitStore,
  type RateLimitWindowPolicy,
  type ResolvedPolicy,
} from '../../lib/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { ReferenceStore } from '../support/reference-store.js';
import { type StoreTarget } from '../support/store-targets.js';

const windowPolicyArb = (i: number) =>
  fc
    .record({
      algorithm: fc.constantFrom(...ALGORITHMS),
      limit: fc.integer({ min: 1, max: 8 }),
      window: fc.integer({ min: 1, max: 4000 }),
      burst: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
    })
    .map((p) =>
      validatePolicy({
        ...p,
        name: `p${i}`,
        burst: p.algorithm === 'token-bucket' || p.algorithm === 'gcra' ? p.burst : undefined,
      }),
    );

const quotaPolicyArb = (i: number) =>
  fc
    .record({
      period: fc.constantFrom('day' as const, 'month' as const),
      timeZone: fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata'),
      limit: fc.integer({ min: 1, max: 8 }),
    })
    .map((p) => validatePolicy({ ...p, algorithm: 'quota', name: `p${i}` }));

const policyArb = (i: number) =>
  fc.oneof({ arbitrary: windowPolicyArb(i), weight: 5 }, { arbitrary: quotaPolicyArb(i), weight: 1 });

const policiesArb = fc
  .integer({ min: 1, max: 3 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => policyArb(i))));

const opArb = fc.record({
  dt: fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 5000 }), weight: 3 },
    // now and then a jump of up to 3 days, across the edges of quota periods
    { arbitrary: fc.integer({ min: 0, max: 3 * 86_400_000 }), weight: 1 },
  ),
  kind: fc.constantFrom('consume', 'consume', 'consume', 'consume', 'peek', 'refund', 'reset'),
  key: fc.constantFrom('a', 'b', 'c'),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 11 })),
  pick: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
});

type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

async function play(
  store: RateLimitStore,
  clock: FakeClock,
  policies: ResolvedPolicy[],
  op: Op,
): Promise<RateLimitDecision[]> {
  const chosen = [...new Set(op.pick.map((i) => policies[i % policies.length]))];
  const items = chosen.map((policy) => ({ policy, key: op.key, cost: op.cost }));
  switch (op.kind) {
    case 'consume':
      return store.consume(items);
    case 'peek':
      return store.peek(items);
    case 'refund':
      return store.refund(items);
    default:
      await store.reset(items);
      return [];
  }
}

/**
 * The store conformance suite: a store decides exactly like the TypeScript reference. Every store runs it
 * (test/conformance for memory and Redis, test/cluster for Redis Cluster).
 */
export function conformanceSuite(target: StoreTarget, { runs = 150 }: { runs?: number } = {}): void {
  describe(`the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it('decides exactly like the TypeScript reference on random sequences of time, keys, costs and policies', async () => {
      await fc.assert(
        fc.asyncProperty(
          policiesArb,
          fc.array(opArb, { minLength: 1, maxLength: 50 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          async (policies, ops, offset) => {
            const clock = new FakeClock(1_700_000_000_000 + offset);
            const reference = new ReferenceStore(clock);
            const store = target.make(clock);
            for (const op of ops) {
              clock.advance(op.dt);
              const expected = await play(reference, clock, policies, op);
              const actual = await play(store, clock, policies, op);
              expect(actual).toEqual(expected);
            }
          },
        ),
        { numRuns: runs },
      );
    });

    it('decides GCRA and token bucket identically on every sequence', async () => {
      await fc.assert(
        fc.asyncProperty(windowPolicyArb(0), fc.array(opArb, { minLength: 1, maxLength: 50 }), async (base, ops) => {
          const source = base.source as RateLimitWindowPolicy;
          const bucket = validatePolicy({ ...source, algorithm: 'token-bucket', name: 'same' });
          const cell = validatePolicy({ ...source, algorithm: 'gcra', name: 'same' });
          const clock = new FakeClock();
          const a = target.make(clock);
          const b = target.make(clock);
          for (const op of ops) {
            clock.advance(op.dt);
            expect(await play(b, clock, [cell], op)).toEqual(await play(a, clock, [bucket], op));
          }
        }),
        { numRuns: Math.ceil(runs / 2) },
      );
    });
  });
}
