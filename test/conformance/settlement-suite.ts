import fc from 'fast-check';

import { validatePolicy, type RateLimitDecision, type ResolvedPolicy } from '../../lib/index.js';
import { emissionUs } from '../../lib/policy/emission.js';
import { ActualCostCap } from '../../lib/policy/debt-cap.js';
import { Reservation } from '../../lib/service/reservation.js';
import type { EngineStore } from '../../lib/stores/engine-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { type Admission, violations } from '../support/history.js';
import type { StoreTarget } from '../support/store-targets.js';

/** A token bucket or GCRA small enough that random sequences spend it, and settle into debt. */
const bucketArb = fc
  .record({
    algorithm: fc.constantFrom('token-bucket' as const, 'gcra' as const),
    limit: fc.integer({ min: 1, max: 8 }),
    window: fc.integer({ min: 1, max: 4000 }),
    burst: fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }),
  })
  .map((fields) => validatePolicy({ ...fields, name: 'settled' }));

const opArb = fc.record({
  dt: fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 5000 }), weight: 1 },
    // the time the whole burst takes to refill: what was reserved before has all come back
    { arbitrary: fc.constant('refill' as const), weight: 3 },
  ),
  kind: fc.constantFrom('consume', 'consume', 'reserve', 'reserve', 'settle', 'settle', 'cancel'),
  /** A small cost, or the whole burst (a reservation of a whole answer): what fills a bucket and refills. */
  cost: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant('burst' as const)),
  /** A settlement's actual cost: below the estimate (a refund), above (a debt), or a settle function's mistake. */
  actual: fc.constantFrom('none', 'half', 'less', 'more', 'huge'),
  /** Which open reservation a settle or cancel ends. */
  pick: fc.nat(),
});

type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

/** The actual cost of a settlement of `estimate`. */
function actualOf(kind: Op['actual'], estimate: number): number {
  if (kind === 'huge') return Number.MAX_SAFE_INTEGER;
  if (kind === 'more') return estimate + 3;
  if (kind === 'less') return Math.max(0, estimate - 1);
  return kind === 'half' ? Math.floor(estimate / 2) : 0;
}

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** A reservation made, not yet ended, and when. */
interface Open {
  readonly reservation: Reservation;
  readonly atMs: number;
  readonly estimate: number;
}

/**
 * What a bucket's key owes after a call, in units, from a peek: its reset is the time until the bucket is full
 * again (rounded up to a ms, so this may say a little more than is owed, never less).
 */
function owedOf(policy: ResolvedPolicy, peeked: RateLimitDecision): number {
  return Math.max(0, peeked.resetMs / msPerUnit(policy) - policy.capacity);
}

/** The time a unit takes to refill, in ms. */
const msPerUnit = (policy: ResolvedPolicy): number =>
  policy.algorithm === 'gcra' ? emissionUs(policy.limit, policy.windowMs) / 1000 : policy.windowMs / policy.limit;

/**
 * Plays `ops` on one key of `store` through RateLimitService's reservations (lib/service/reservation.ts, the
 * refund rule and the debt cap as the module applies them), and returns every admission: a consume at its
 * time, a settled reservation from its charge to its settlement at its actual cost (at most its estimate: what
 * it took past it is owed), one left open at its estimate; and what the key owed at each time.
 */
async function history(store: EngineStore, policy: ResolvedPolicy, ops: readonly Op[], clock: FakeClock) {
  const admitted: Admission[] = [];
  const owed = new Map<number, number>();
  const open: Open[] = [];
  const cap = new ActualCostCap(silent);
  const charge = store.charge?.bind(store);
  if (charge === undefined) throw new Error(`the ${store.constructor.name} under test has no charge()`);
  const reservations = { refund: store.refund.bind(store), charge, now: () => clock.now() };
  for (const op of ops) {
    clock.advance(op.dt === 'refill' ? Math.ceil(policy.capacity * msPerUnit(policy)) : op.dt);
    const nowMs = clock.now();
    const cost = op.cost === 'burst' ? policy.capacity : op.cost;
    const item = { policy, key: 'k', cost };
    if (op.kind === 'consume') {
      if (nth(await store.consume([item]), 0).allowed) admitted.push({ from: nowMs, to: nowMs, cost });
    } else if (op.kind === 'reserve') {
      const decisions = await store.consume([item]);
      const check = (actual: unknown) => [cap.clamp(policy, cost, actual as number, 'the settlement suite')];
      const reservation = new Reservation([item], decisions, reservations, check);
      if (reservation.allowed) open.push({ reservation, atMs: nowMs, estimate: cost });
    } else if (open.length > 0) {
      const [ended] = open.splice(op.pick % open.length, 1) as [Open];
      // an overrun counts at the estimate: its excess is a debt, which the bound adds where it is owed (and
      // which the debt cap may forgive in part, so that the whole excess was never taken)
      const actual = op.kind === 'cancel' ? 0 : Math.min(actualOf(op.actual, ended.estimate), ended.estimate);
      if (op.kind === 'cancel') await ended.reservation.cancel();
      else await ended.reservation.settle(actualOf(op.actual, ended.estimate));
      admitted.push({ from: ended.atMs, to: nowMs, cost: actual });
    }
    const peeked = nth(await store.peek([{ policy, key: 'k' }]), 0);
    owed.set(nowMs, Math.max(owed.get(nowMs) ?? 0, owedOf(policy, peeked)));
  }
  for (const { atMs, estimate } of open) admitted.push({ from: atMs, to: atMs, cost: estimate });
  return { admitted, owed: (ms: number) => owed.get(ms) ?? 0 };
}

/**
 * Settlements on one store: on random sequences of consumes, reservations, settlements (under the estimate,
 * over it, far over it) and cancellations, the admitted cost, each settled request counted at its actual cost
 * from its charge to its settlement (an overrun at its estimate, the rest owed), stays within the bucket's bound
 * over every interval: the burst, the refill and what the key owes at the interval's end
 * (test/support/history.ts). A refund that gave back units another
 * request took since would admit past it.
 */
export function settlementSuite(target: StoreTarget, { runs = 1000 }: { runs?: number } = {}): void {
  const replay =
    process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH };
  describe(`settlements on the ${target.name} store`, () => {
    beforeAll(() => target.setup());
    afterAll(() => target.teardown());

    it('admit, counting each settled request at its actual cost, no more than the bucket allows in any interval', async () => {
      await fc.assert(
        fc.asyncProperty(
          bucketArb,
          fc.array(opArb, { minLength: 1, maxLength: 60 }),
          fc.integer({ min: 0, max: 10_000_000 }),
          async (policy, ops, offset) => {
            const clock = new FakeClock(1_700_000_000_000 + offset);
            const { admitted, owed } = await history(target.make(clock), policy, ops, clock);
            expect(violations(policy, admitted, [], owed)).toEqual([]);
          },
        ),
        { numRuns: runs, ...replay },
      );
    });
  });
}
