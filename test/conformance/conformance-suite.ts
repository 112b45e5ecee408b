import fc from 'fast-check';

import {
  validatePolicy,
  type RateLimitDecision,
  type RateLimitWindowPolicy,
  type ResolvedPolicy,
} from '../../lib/index.js';
import type { EngineStore } from '../../lib/stores/engine-store.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import type { Clock } from '../../lib/util/clock.js';
import { MAX_LEAD_US } from '../../lib/policy/emission.js';
import { checkGcraRate, MAX_UNITS } from '../../lib/policy/value-checks.js';
import type { RateLimitAlgorithm } from '../../lib/policy/policy.types.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { policyOf } from '../support/policies.js';
import { ReferenceStore } from '../support/reference-store.js';
import { type StoreTarget } from '../support/store-targets.js';
import { TEST_START_MS } from '../support/time.js';

/** The algorithms of a window (every one but quotas, which count per calendar period). */
const WINDOWED = ALGORITHMS.filter(
  (algorithm): algorithm is RateLimitWindowPolicy['algorithm'] => algorithm !== 'quota',
);

/** A policy of one of `algorithms` (every algorithm unless said), small enough that random sequences exhaust it. */
const smallPolicyArb = (i: number, algorithms: readonly RateLimitAlgorithm[] = ALGORITHMS) =>
  fc
    .record({
      algorithm: fc.constantFrom(...algorithms),
      limit: fc.integer({ min: 1, max: 8 }),
      window: fc.integer({ min: 1, max: 4000 }),
      burst: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
      fromFirstRequest: fc.boolean(),
      period: fc.constantFrom('day' as const, 'month' as const),
      timeZone: fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata'),
      // now and then a penalty: a denial blocks the key
      block: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined, freq: 3 }),
    })
    .map(({ algorithm, fromFirstRequest, burst, ...fields }) => {
      const policy = policyOf(algorithm, { ...fields, name: `p${i}` });
      if (policy.algorithm === 'quota') return validatePolicy(policy);
      const resolved = validatePolicy({
        ...policy,
        burst: algorithm === 'token-bucket' || algorithm === 'gcra' ? burst : undefined,
        anchor: algorithm === 'fixed-window' && fromFirstRequest ? ('first-request' as const) : undefined,
      });
      return perPlanGcra(resolved, fromFirstRequest);
    });

/**
 * Half the GCRA policies have a limit per request (a plan): their own twins, whose state keeps the limit it
 * was written with. The policy is the engine's variant of the declared limit (LimitVariants).
 */
function perPlanGcra(policy: ResolvedPolicy, perPlan: boolean): ResolvedPolicy {
  if (policy.algorithm !== 'gcra' || !perPlan) return policy;
  const { limit, burst } = policy.source as RateLimitWindowPolicy;
  const declared = validatePolicy({ ...(policy.source as RateLimitWindowPolicy), limit: () => limit as number });
  return Object.freeze({
    ...declared,
    limit: limit as number,
    capacity: (burst as number | undefined) ?? (limit as number),
  });
}

/**
 * Limits and windows near the bound of exact integer math: max(limit, burst) × windowMs close to 2^51. Not
 * quotas: their period is a calendar day or month, not a window to bring near the bound.
 */
const largePolicyArb = (i: number) =>
  fc
    .record({
      algorithm: fc.constantFrom(...WINDOWED),
      limit: fc.oneof(fc.integer({ min: 1, max: 2 ** 26 }), fc.integer({ min: 1, max: 100 })),
      burst: fc.option(fc.integer({ min: 1, max: 2 ** 26 }), { nil: undefined }),
      below: fc.integer({ min: 0, max: 3 }),
      fraction: fc.constantFrom(1, 1 / 3, 1 / 1024),
      fromFirstRequest: fc.boolean(),
    })
    .map(({ algorithm, limit, burst: b, below, fraction, fromFirstRequest }) => {
      const burst = algorithm === 'token-bucket' || algorithm === 'gcra' ? b : undefined;
      // GCRA's bound is in µs too: burst × ceil(1000 × window / limit) and 1000 × window within MAX_LEAD_US
      const units = Math.floor((MAX_UNITS * fraction) / Math.max(limit, burst ?? limit));
      const lead = Math.floor((MAX_LEAD_US * fraction * Math.min(1, limit / (burst ?? limit))) / 1000);
      const most = algorithm === 'gcra' ? Math.min(units, lead - Math.ceil(limit / 1000)) : units;
      const anchor = algorithm === 'fixed-window' && fromFirstRequest ? ('first-request' as const) : undefined;
      return { algorithm, limit, burst, anchor, window: Math.max(1, most - below), name: `p${i}` };
    })
    // GCRA refuses a limit its whole-µs emission interval would enforce lower (a short window of a large limit)
    .filter((p) => p.algorithm !== 'gcra' || checkGcraRate(p.limit, p.window) === undefined)
    .map((p) => validatePolicy(p));

const policyArb = (i: number) =>
  fc.oneof({ arbitrary: smallPolicyArb(i), weight: 6 }, { arbitrary: largePolicyArb(i), weight: 1 });

const policiesArb = fc
  .integer({ min: 1, max: 3 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => policyArb(i))));

const opArb = fc.record({
  dt: fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 5000 }), weight: 3 },
    // jitter both ways, and steps back by up to one window of the small policies (or an hour)
    { arbitrary: fc.integer({ min: -50, max: 50 }), weight: 2 },
    { arbitrary: fc.integer({ min: -5000, max: 0 }), weight: 1 },
    { arbitrary: fc.constant(-3_600_000), weight: 1 },
    // now and then a jump of up to 3 days, across the edges of quota periods
    { arbitrary: fc.integer({ min: 0, max: 3 * 86_400_000 }), weight: 1 },
  ),
  /** Which of two app instances decides: the second one's clock is `skew` ms behind the first's. */
  instance: fc.constantFrom(0, 0, 1),
  kind: fc.constantFrom(
    'consume',
    'consume',
    'consume',
    'consume',
    'peek',
    'refund',
    'charge',
    'reset',
    'block',
    'unblock',
  ),
  /** How long a `block` op blocks its keys (0: a block that has already ended). */
  blockMs: fc.integer({ min: 0, max: 5000 }),
  key: fc.constantFrom('a', 'b', 'c'),
  cost: fc.oneof(
    fc.constant(1),
    fc.integer({ min: 0, max: 11 }),
    // relative to the first chosen policy's capacity: the edges of "fits" and "never fits"
    fc.constantFrom('capacity - 1', 'capacity', 'capacity + 1', 'huge'),
  ),
  pick: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
  /** The key's plan for this op: its limits as declared, tripled (an upgrade) or halved (a downgrade). */
  plan: fc.constantFrom(1, 1, 1, 3, 0.5),
  /** A lease's take, for stores that grant one: up to this many units more than the cost. */
  upTo: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined, freq: 2 }),
});

/**
 * Two app instances' clocks on one store: the second is `skewMs` behind the first. Every op reads the clock of
 * the instance that decides it, so the store sees interleaved, non-monotonic time.
 */
class TwoClocks implements Clock {
  readonly base: FakeClock;
  private behind = false;

  constructor(
    startMs: number,
    private readonly skewMs: number,
  ) {
    this.base = new FakeClock(startMs);
  }

  use(instance: number): void {
    this.behind = instance === 1;
  }

  now(): number {
    return this.base.now() - (this.behind ? this.skewMs : 0);
  }
}

function costOf(op: Op, policy: ResolvedPolicy): number {
  if (typeof op.cost === 'number') return op.cost;
  const capacity = Number.isNaN(policy.capacity) ? 1 : policy.capacity;
  if (op.cost === 'huge') return Number.MAX_SAFE_INTEGER;
  if (op.cost === 'capacity - 1') return capacity - 1;
  return op.cost === 'capacity' ? capacity : capacity + 1;
}

type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * The policy under the op's plan, as DecisionEngine.withLimit makes it for a limit function: the same id (so
 * the same state), other limits. Policies near the bounds of exact math keep theirs.
 */
function planned(policy: ResolvedPolicy, plan: number): ResolvedPolicy {
  const scale = (n: number) => Math.max(1, Math.floor(n * plan));
  if (plan === 1 || scale(Math.max(policy.limit, policy.capacity)) * policy.windowMs > MAX_UNITS) return policy;
  return Object.freeze({ ...policy, limit: scale(policy.limit), capacity: scale(policy.capacity) });
}

async function play(
  store: EngineStore,
  policies: ResolvedPolicy[],
  op: Op,
  grants: boolean,
): Promise<RateLimitDecision[]> {
  const chosen = [...new Set(op.pick.map((i) => nth(policies, i % policies.length)))].map((p) => planned(p, op.plan));
  const cost = costOf(op, nth(chosen, 0));
  const items = chosen.map((policy) => ({ policy, key: op.key, cost }));
  switch (op.kind) {
    case 'consume':
      // a store that grants leases takes up to op.upTo more (a store that does not is left to decide the cost)
      if (op.upTo === undefined || store.grantsUpTo !== true || !grants) return store.consume(items);
      return store.consume(items.map((item) => ({ ...item, upTo: cost + (op.upTo as number) })));
    case 'peek':
      return store.peek(items);
    case 'refund':
      return store.refund(items);
    case 'charge': {
      // a concurrency limit cannot be charged (refused: its own test below): charged without it
      const chargeable = items.filter(({ policy }) => policy.algorithm !== 'concurrency');
      return chargeOn(store)(chargeable);
    }
    case 'block':
      await store.block?.(items, op.blockMs);
      return store.peek(items);
    case 'unblock':
      await store.unblock?.(items);
      return store.peek(items);
    default:
      await store.reset(items);
      return [];
  }
}

/** The store's charge(): every store under test has one (the module's three and the reference). */
function chargeOn(store: EngineStore): NonNullable<EngineStore['charge']> {
  const charge = store.charge;
  if (charge === undefined) throw new Error(`the ${store.constructor.name} under test has no charge()`);
  return (items) => charge.call(store, items);
}

/**
 * The store conformance suite: a store decides exactly like the TypeScript reference. Every store runs it
 * (test/conformance for memory and Redis, test/cluster for Redis Cluster). Runs given one `seed` play the same
 * random sequences (a store's two paths: store-conformance.spec.ts).
 */
export function conformanceSuite(
  target: StoreTarget,
  { runs = 150, seed }: { runs?: number; seed?: number } = {},
): void {
  // FC_SEED and FC_PATH (from a failure's report) replay one failing sequence.
  const replay =
    process.env.FC_SEED === undefined
      ? seed === undefined
        ? {}
        : { seed }
      : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH };
  describe(`the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it('decides exactly like the TypeScript reference on random sequences of time (jittered, stepping back, two skewed clocks), keys, costs, policies and blocks', async () => {
      await fc.assert(
        fc.asyncProperty(
          policiesArb,
          fc.array(opArb, { minLength: 1, maxLength: 50 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.integer({ min: 0, max: 5000 }),
          async (policies, ops, offset, skewMs) => {
            const clock = new TwoClocks(1_700_000_000_000 + offset, skewMs);
            const reference = new ReferenceStore(clock);
            const store = target.make(clock);
            for (const op of ops) {
              clock.base.advance(op.dt);
              clock.use(op.instance);
              const grants = store.grantsUpTo === true;
              const expected = await play(reference, policies, op, grants);
              const actual = await play(store, policies, op, grants);
              expect(actual).toEqual(expected);
            }
          },
        ),
        { numRuns: runs, ...replay },
      );
    });

    // Random sequences seldom land on the very millisecond a window ends: these do, on both sides of it.
    it('decides a fixed window from the first request like the reference at the edges of its windows', async () => {
      const policy = validatePolicy({
        name: 'edges',
        algorithm: 'fixed-window',
        anchor: 'first-request',
        limit: 2,
        window: 1000,
      });
      const clock = new FakeClock(1_700_000_000_123);
      const reference = new ReferenceStore(clock);
      const store = target.make(clock);
      // from the first request: +0, +999 (the last ms), +1000 (a new window), then back 1 ms, and a refund
      const steps: [number, 'consume' | 'refund', number][] = [
        [0, 'consume', 1],
        [999, 'consume', 1],
        [0, 'consume', 1],
        [1, 'consume', 1],
        [0, 'consume', 2],
        [-1, 'consume', 1],
        [998, 'refund', 1],
        [1, 'consume', 1],
        [1000, 'consume', 2],
      ];
      for (const [dt, kind, cost] of steps) {
        clock.advance(dt);
        const item = [{ policy, key: 'edge', cost }];
        const expected = kind === 'consume' ? await reference.consume(item) : await reference.refund(item);
        expect(kind === 'consume' ? await store.consume(item) : await store.refund(item)).toEqual(expected);
      }
    });

    // A refund of a concurrency limit gives back its oldest leases (the log's, the newest units): which
    // ones went back shows in the reset and in when the next unit frees.
    it.each(['concurrency', 'sliding-window-log'] as const)(
      'gives the units of a %s back in its order, like the reference',
      async (algorithm) => {
        const policy = validatePolicy({ name: `order-${algorithm}`, algorithm, limit: 3, window: 60_000 });
        const clock = new FakeClock(1_700_000_000_000);
        const reference = new ReferenceStore(clock);
        const store = target.make(clock);
        const item = (cost: number) => [{ policy, key: 'order', cost }];
        for (const [dt, kind, cost] of [
          [0, 'consume', 1],
          [10_000, 'consume', 1],
          [10_000, 'consume', 1],
          [1, 'refund', 1],
          [1, 'consume', 2],
          [1, 'peek', 1],
        ] as const) {
          clock.advance(dt);
          const play = (s: typeof store) =>
            kind === 'consume' ? s.consume(item(cost)) : kind === 'refund' ? s.refund(item(cost)) : s.peek(item(0));
          expect(await play(store)).toEqual(await play(reference));
        }
      },
    );

    // Found by random sequences with unblock() among their calls: the stores drop the state of a key whose
    // window has ended on the caller's clock, so an instance whose clock is behind admits again.
    it('regression (an unblock after the window): unblock() leaves the state that a clock behind still counts', async () => {
      const policy = validatePolicy({ name: 'kept', algorithm: 'fixed-window', limit: 1, window: 1000 });
      const clock = new FakeClock(1_700_000_000_000);
      const reference = new ReferenceStore(clock);
      const store = target.make(clock);
      const item = { policy, key: 'k', cost: 1 };
      expect(await store.consume([item])).toEqual(await reference.consume([item]));
      clock.advance(1000); // the next window, on this instance's clock
      await Promise.all([store.unblock?.([item]), reference.unblock([item])]);
      clock.advance(-500); // an instance 500 ms behind, still in the first window: its unit counts there
      const expected = await reference.consume([item]);
      expect(expected[0]?.allowed).toBe(false);
      expect(await store.consume([item])).toEqual(expected);
    });

    it.each(['token-bucket', 'gcra'] as const)(
      'regression (a downgrade after the old TTL): %s units drain at the limit they were written with, so a store that expired the key decides as one that did not',
      async (algorithm) => {
        const clock = new FakeClock(1_700_000_000_000);
        const reference = new ReferenceStore(clock);
        const store = target.make(clock);
        // declared per plan (a limit function), as the engine makes each request's variant of it
        const declared = validatePolicy({ name: `downgraded-${algorithm}`, algorithm, limit: () => 10, window: '10m' });
        const policy: ResolvedPolicy = Object.freeze({ ...declared, limit: 10, capacity: 10 });
        const halved: ResolvedPolicy = Object.freeze({ ...declared, limit: 5, capacity: 5 });
        const both = async (p: ResolvedPolicy, cost: number) => {
          const expected = await reference.consume([{ policy: p, key: 'k', cost }]);
          expect(await store.consume([{ policy: p, key: 'k', cost }])).toEqual(expected);
          return nth(expected, 0);
        };
        expect((await both(policy, 10)).allowed).toBe(true);
        // 15 min later the key's TTL (10 min at 10 per 10 min) and the PostgreSQL target's slack (1 min) have
        // passed: that store no longer holds the key. At the new 5 per 10 min, 2.5 units would still be taken.
        clock.advance(15 * 60_000);
        const downgraded = await both(halved, 5);
        expect(downgraded).toMatchObject({ allowed: true, remaining: 0, limit: 5 });
      },
    );

    // Found on PostgreSQL by the random sequences below: a numeric-limit call on a per-plan key whose TAT had
    // lapsed wrote the limit with its TAT where the store still held the lapsed key, and none where it had
    // expired it, so the next per-plan call read the lead at another interval (admitted on one, denied on the other).
    it('regression (a lapsed per-plan GCRA key): what is written does not depend on whether the store still holds the lapsed key', async () => {
      const fixed = validatePolicy({ name: 'plan', algorithm: 'gcra', limit: 1, window: 1, burst: 1 });
      const policy = perPlanGcra(fixed, true);
      const clock = new FakeClock(TEST_START_MS);
      const reference = new ReferenceStore(clock);
      const store = target.make(clock);
      const both = async (p: ResolvedPolicy, cost: number) => {
        const expected = await reference.consume([{ policy: p, key: 'k', cost }]);
        expect(await store.consume([{ policy: p, key: 'k', cost }])).toEqual(expected);
      };
      await both(policy, 1);
      clock.advance(5 * 86_400_000); // past every target's slack: the memory store and PostgreSQL expire the key
      await both(planned(fixed, 3), 2); // a numeric limit (as RateLimitService calls with one), three times higher
      await both(policy, 0);
    });

    it('decides a per-plan GCRA key like the reference through upgrades, downgrades (its lead converted) and calls with a numeric limit', async () => {
      const perPlan = fc
        .record({
          limit: fc.integer({ min: 1, max: 8 }),
          window: fc.integer({ min: 1, max: 4000 }),
          burst: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
        })
        .map((p) => {
          const fixed = validatePolicy({ ...p, algorithm: 'gcra', name: 'plan' });
          return [perPlanGcra(fixed, true), fixed] as const;
        });
      await fc.assert(
        fc.asyncProperty(perPlan, fc.array(opArb, { minLength: 1, maxLength: 50 }), async ([policy, fixed], ops) => {
          const clock = new FakeClock(TEST_START_MS);
          const reference = new ReferenceStore(clock);
          const store = target.make(clock);
          for (const op of ops) {
            clock.advance(op.dt);
            // now and then a call with a numeric limit under the same name (RateLimitService)
            const chosen = op.instance === 1 ? fixed : policy;
            const grants = store.grantsUpTo === true;
            expect(await play(store, [chosen], op, grants)).toEqual(await play(reference, [chosen], op, grants));
          }
        }),
        { numRuns: runs, ...replay },
      );
    });

    it("decides GCRA and token bucket identically when the limit divides 1000 × window (then GCRA's interval is exact in µs)", async () => {
      await fc.assert(
        fc.asyncProperty(
          smallPolicyArb(0, WINDOWED),
          fc.array(opArb, { minLength: 1, maxLength: 50 }),
          async (base, ops) => {
            // a fixed window's anchor means nothing to the buckets
            const { anchor: _anchor, ...source } = base.source as RateLimitWindowPolicy;
            fc.pre(typeof source.limit === 'number' && (1000 * base.windowMs) % source.limit === 0);
            const bucket = validatePolicy({ ...source, algorithm: 'token-bucket', name: 'same' });
            const cell = validatePolicy({ ...source, algorithm: 'gcra', name: 'same' });
            const clock = new FakeClock(TEST_START_MS);
            const a = target.make(clock);
            const b = target.make(clock);
            // one limit throughout: when it changes, the bucket keeps the units taken, GCRA its TAT; a charge of
            // a huge cost clamps both at the same debt cap (one capacity owed)
            for (const op of ops.map((o): Op => ({ ...o, plan: 1 }))) {
              clock.advance(Math.max(0, op.dt));
              expect(await play(b, [cell], op, true)).toEqual(await play(a, [bucket], op, true));
            }
          },
        ),
        { numRuns: Math.ceil(runs / 2) },
      );
    });
  });
}
