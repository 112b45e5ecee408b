import fc from 'fast-check';

import { MemoryRateLimitStore, validatePolicy, type ResolvedPolicy } from '../../lib/index.js';
import { DecisionEngine, denies, type EngineItem } from '../../lib/engine/decision-engine.js';
import { emissionUs } from '../../lib/policy/emission.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailingStore } from '../support/failing-store.js';

// A fleet of decision engines (one per app instance) on one store, on a fake clock: what leases may and may not
// do. The store is the memory store's procedure seen as a remote one (not in process), so the engines lease.

/** The memory store as another process would see it: it grants leases and is asked through the engine's path. */
class RemoteMemoryStore implements RateLimitStore {
  readonly grantsUpTo = true;
  consumes = 0;
  private readonly inner: MemoryRateLimitStore;
  constructor(clock: FakeClock) {
    this.inner = new MemoryRateLimitStore({ clock });
  }
  consume: RateLimitStore['consume'] = (items) => {
    this.consumes += 1;
    return this.inner.consume(items);
  };
  peek: RateLimitStore['peek'] = (items) => this.inner.peek(items);
  refund: RateLimitStore['refund'] = (items) => this.inner.refund(items);
  reset: RateLimitStore['reset'] = (items) => this.inner.reset(items);
}

const quiet = { log() {}, warn() {}, error() {} };

function fleet(size: number, store: RateLimitStore, clock: FakeClock): DecisionEngine[] {
  const stores = { rates: store, quotas: store, owned: [] };
  return Array.from({ length: size }, () => new DecisionEngine({ stores, clock, timeoutMs: 5000, logger: quiet }));
}

const item = (policy: ResolvedPolicy, key: string, cost: number, order = 0): EngineItem => ({
  policy,
  key,
  cost,
  failMode: 'closed',
  order,
});

interface Admission {
  readonly atMs: number;
  readonly cost: number;
}

/** The most units the algorithm lets pass in [a, b] for admissions at those times: see each case. */
function violation(policy: ResolvedPolicy, admitted: readonly Admission[]): string | undefined {
  const sum = (from: number, to: number) =>
    admitted.filter((a) => a.atMs >= from && a.atMs <= to).reduce((n, a) => n + a.cost, 0);
  const { limit, windowMs: w, capacity } = policy;
  for (const { atMs } of admitted) {
    if (policy.algorithm === 'fixed-window' || policy.algorithm === 'quota') {
      const span = policy.algorithm === 'quota' ? 86_400_000 : w;
      const start = Math.floor(atMs / span) * span;
      if (sum(start, start + span - 1) > limit) return `window at ${start} admitted ${sum(start, start + span - 1)}`;
    } else if (policy.algorithm === 'sliding-window-counter') {
      // the algorithm's own bound at every admission: current·W + previous·(W − elapsed) <= limit·W
      const index = Math.floor(atMs / w);
      const current = sum(index * w, atMs);
      const previous = sum((index - 1) * w, index * w - 1);
      if (current * w + previous * (w - (atMs - index * w)) > limit * w) return `estimate at ${atMs} above ${limit}`;
    } else {
      // buckets: over any [a, b], at most the burst plus the refill (GCRA refills one unit per emission interval)
      const perUnitUs = policy.algorithm === 'gcra' ? emissionUs(limit, w) : (1000 * w) / limit;
      for (const { atMs: from } of admitted) {
        if (from > atMs) continue;
        const allowed = capacity + ((atMs - from) * 1000) / perUnitUs;
        if (sum(from, atMs) > allowed) return `[${from}, ${atMs}] admitted ${sum(from, atMs)} > ${allowed}`;
      }
    }
  }
  return undefined;
}

const hotPolicyArb = fc
  .record({
    algorithm: fc.constantFrom('fixed-window', 'sliding-window-counter', 'token-bucket', 'gcra', 'quota'),
    limit: fc.integer({ min: 1, max: 40 }),
    window: fc.integer({ min: 50, max: 3000 }),
    burst: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
    lease: fc.integer({ min: 2, max: 16 }),
  })
  .map(({ algorithm, limit, window, burst, lease }) =>
    algorithm === 'quota'
      ? validatePolicy({ name: 'hot', algorithm, period: 'day', limit, lease })
      : validatePolicy({
          name: 'hot',
          algorithm,
          limit,
          window,
          lease,
          burst: algorithm === 'token-bucket' || algorithm === 'gcra' ? burst : undefined,
        }),
  );

const opArb = fc.record({
  dt: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: 20 }),
    fc.integer({ min: 0, max: 600 }),
    fc.integer({ min: 0, max: 3000 }),
  ),
  instance: fc.nat(),
  cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 4 })),
  /** The request also falls under a per-instance limit that may deny it (then it consumes nothing). */
  other: fc.boolean(),
  /** How many such requests the instance gets at once (a burst after an idle time is where leases could cheat). */
  repeat: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 24 })),
});

describe('leases over a fleet of engines on one store (fake clock)', () => {
  it('never admit more than the algorithm allows in any window, whatever the instances, costs and denials of other policies', async () => {
    await fc.assert(
      fc.asyncProperty(
        hotPolicyArb,
        fc.integer({ min: 1, max: 5 }),
        fc.array(opArb, { minLength: 1, maxLength: 60 }),
        async (hot, size, ops) => {
          const clock = new FakeClock(1_700_000_000_000);
          const store = new RemoteMemoryStore(clock);
          const engines = fleet(size, store, clock);
          const other = validatePolicy({ name: 'per-instance', algorithm: 'fixed-window', limit: 2, window: 100 });
          const admitted: Admission[] = [];
          try {
            for (const op of ops) {
              clock.advance(op.dt);
              const i = op.instance % size;
              const items = [item(hot, 'tenant', op.cost)];
              if (op.other) items.push(item(other, `instance-${i}`, 1, 1));
              for (let n = 0; n < op.repeat; n++) {
                const evaluation = await (engines[i] as DecisionEngine).decide(items);
                if (!denies(evaluation)) admitted.push({ atMs: clock.now(), cost: op.cost });
              }
            }
          } finally {
            await Promise.all(engines.map((e) => e.dispose()));
          }
          expect(violation(hot, admitted)).toBeUndefined();
        },
      ),
      { numRuns: 400 },
    );
  });

  it('serve a hot key with about one store call per lease of requests, and admit the limit less at most instances × lease', async () => {
    // the first requests at the start of a window: they span exactly 5 windows
    const clock = new FakeClock(1_700_000_000_000 - 2);
    const store = new RemoteMemoryStore(clock);
    const engines = fleet(4, store, clock);
    const hot = validatePolicy({ name: 'hot', algorithm: 'fixed-window', limit: 1000, window: 1000, lease: 20 });
    let admitted = 0;
    // 2,000 requests a second offered for 5 windows of 1,000: every instance every 2 ms, in turn
    for (let n = 0; n < 10_000; n++) {
      clock.advance(n % 4 === 0 ? 2 : 0);
      const evaluation = await (engines[n % 4] as DecisionEngine).decide([item(hot, 'tenant', 1)]);
      if (!denies(evaluation)) admitted += 1;
    }
    await Promise.all(engines.map((e) => e.dispose()));
    expect(admitted).toBeLessThanOrEqual(5 * 1000);
    expect(admitted).toBeGreaterThanOrEqual(5 * (1000 - 4 * 20));
    // takes grow to 20 units: the admitted requests cost about 1/20 of a store call each (denied ones ask too)
    const takes = store.consumes;
    expect(takes).toBeLessThan(10_000 / 4);
    expect(takes / admitted).toBeLessThan(0.2);
  });

  it('a request that another policy refuses spends nothing of the lease and consumes nothing in the store', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const store = new RemoteMemoryStore(clock);
    const [engine] = fleet(1, store, clock) as [DecisionEngine];
    const hot = validatePolicy({ name: 'hot', algorithm: 'fixed-window', limit: 10, window: 1000, lease: 4 });
    const strict = validatePolicy({ name: 'strict', algorithm: 'fixed-window', limit: 1, window: 1000 });
    // the first takes ask for 1, then 2 (the key is hot): 3 units taken, all spent
    for (let n = 0; n < 3; n++) expect(denies(await engine.decide([item(hot, 'tenant', 1)]))).toBe(false);
    // the next take asks for 4, with a policy that can never let a cost of 2 through
    const refused = await engine.decide([item(hot, 'tenant', 1), item(strict, 'x', 2, 1)]);
    expect(denies(refused)).toBe(true);
    // the store still has 7 units for the key: exactly 7 more requests pass (takes of 4, then the 3 that fit)
    let admitted = 0;
    for (let n = 0; n < 12; n++) if (!denies(await engine.decide([item(hot, 'tenant', 1)]))) admitted += 1;
    expect(admitted).toBe(7);
    await engine.dispose();
  });

  it("a leased policy failing to local limits is refused at its local limit while the store fails (regression: the leases' rejoin dropped the fallback's decisions)", async () => {
    // The local fallback decides copies of the items; the leases matched the store's decisions to the items
    // sent, found none for the copies, and a request the local limit refused passed.
    const clock = new FakeClock(1_700_000_000_000);
    const store = Object.assign(new FailingStore(new MemoryRateLimitStore({ clock })), { grantsUpTo: true });
    const engine = new DecisionEngine({
      stores: { rates: store, quotas: store, owned: [] },
      clock,
      timeoutMs: 5000,
      logger: quiet,
    });
    const hot = validatePolicy({ name: 'hot', algorithm: 'fixed-window', limit: 100, window: 1000, lease: 10 });
    const local = { ...item(hot, 'tenant', 1), failMode: 'local' as const };
    const resolved = validatePolicy({ ...hot.source, localLimit: 3, failMode: 'local' } as never);
    const localItem = { ...local, policy: resolved };
    store.health = 'fails';
    const admitted: boolean[] = [];
    for (let n = 0; n < 5; n++) admitted.push(!denies(await engine.decide([localItem])));
    expect(admitted).toEqual([true, true, true, false, false]);
    await engine.dispose();
  });
});
