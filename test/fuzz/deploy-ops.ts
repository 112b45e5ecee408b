import fc from 'fast-check';

import { type RateLimitPolicy, type ResolvedPolicy, validatePolicy } from '../../lib/index.js';
import { MAX_CLOCK_SKEW_MS } from '../../lib/policy/max-wait.js';
import type { OperatorAction } from './fuzz-stores.js';

/** The one name every version of the policy has: a deploy changes its shape under it. */
export const POLICY_NAME = 'fuzzed';

const windowArb = fc.constantFrom(1000, 2000, 10_000, 60_000, 3_600_000);
const limitArb = fc.integer({ min: 1, max: 6 });
/** Now and then a penalty after a denial (the policy's own `block`: its duration is part of the bound). */
const blockArb = fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined, freq: 6 });

/** A version of the policy, as a deploy declares it. */
const versionArb: fc.Arbitrary<RateLimitPolicy> = fc.oneof(
  fc
    .record({ window: windowArb, limit: limitArb, block: blockArb, fromFirst: fc.boolean() })
    .map(({ fromFirst, ...p }) => ({
      ...p,
      algorithm: 'fixed-window' as const,
      ...(fromFirst ? { anchor: 'first-request' as const } : {}),
    })),
  fc.record({
    algorithm: fc.constantFrom('sliding-window-log' as const, 'sliding-window-counter' as const),
    window: windowArb,
    limit: limitArb,
    block: blockArb,
  }),
  fc.record({
    algorithm: fc.constantFrom('token-bucket' as const, 'gcra' as const),
    window: windowArb,
    limit: limitArb,
    burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    block: blockArb,
  }),
  fc.record({
    algorithm: fc.constant('quota' as const),
    limit: limitArb,
    period: fc.constantFrom('day' as const, 'month' as const),
    timeZone: fc.constantFrom('UTC', 'Europe/Paris', 'Asia/Kolkata'),
  }),
);

/** What makes a stored value mean what it means: versions of one shape would share their state. */
function shapeOf(policy: RateLimitPolicy): string {
  const p = policy as Partial<Record<'algorithm' | 'window' | 'anchor' | 'period' | 'timeZone', unknown>>;
  return JSON.stringify([p.algorithm, p.window, p.anchor, p.period, p.timeZone]);
}

/**
 * A deploy's change of one thing of what makes the shape: the window, the anchor, the algorithm, the calendar;
 * or a bucket's algorithm alone (token bucket ↔ GCRA at the same window), which keeps the state both read alike.
 */
type Change = 'window' | 'anchor' | 'algorithm' | 'calendar' | 'bucket';

function changed(version: RateLimitPolicy, change: Change, other: RateLimitPolicy, window: number): RateLimitPolicy {
  const { algorithm } = version;
  if (change === 'bucket' && (algorithm === 'token-bucket' || algorithm === 'gcra')) {
    return { ...version, algorithm: algorithm === 'gcra' ? 'token-bucket' : 'gcra' };
  }
  if (change === 'algorithm' || (change === 'calendar') !== (algorithm === 'quota')) return other;
  if (version.algorithm === 'quota') {
    // another time zone, or the other period
    if (other.algorithm === 'quota' && other.timeZone !== version.timeZone)
      return { ...version, timeZone: other.timeZone };
    return { ...version, period: version.period === 'month' ? 'day' : 'month' };
  }
  if (change === 'anchor' && algorithm === 'fixed-window') {
    const { anchor, ...rest } = version;
    return anchor === undefined ? { ...rest, anchor: 'first-request' as const } : rest;
  }
  return { ...version, window };
}

/**
 * Two or three versions of one policy, each of a shape of its own (versions of one shape would share their
 * state); the first is what both instances start on. Each deploy changes one thing, as most do: more often the
 * window, the anchor or the calendar than the algorithm.
 */
export const versionsArb: fc.Arbitrary<ResolvedPolicy[]> = fc
  .tuple(
    versionArb,
    fc.array(
      fc.tuple(
        fc.constantFrom<Change>('window', 'window', 'anchor', 'algorithm', 'calendar', 'bucket', 'bucket'),
        versionArb,
        windowArb,
      ),
      { minLength: 1, maxLength: 2 },
    ),
  )
  .map(([first, changes]) => {
    const versions = [first];
    for (const [change, other, window] of changes) {
      const next = changed(versions[versions.length - 1] as RateLimitPolicy, change, other, window);
      if (!versions.some((v) => shapeOf(v) === shapeOf(next))) versions.push(next);
    }
    return versions;
  })
  .filter((versions) => versions.length >= 2)
  .map((versions) =>
    versions.map((v) => validatePolicy({ ...v, name: POLICY_NAME, key: 'ip' } as RateLimitPolicy, 'deploy fuzzer')),
  );

/** A cost relative to the capacity of the version that decides: the edges of "fits" and "never fits". */
export type Cost = number | 'capacity' | 'capacity + 1';
const costArb: fc.Arbitrary<Cost> = fc.oneof(
  { arbitrary: fc.constant(1), weight: 4 },
  { arbitrary: fc.integer({ min: 0, max: 6 }), weight: 2 },
  { arbitrary: fc.constantFrom<Cost>('capacity', 'capacity + 1'), weight: 1 },
);

/** A reservation's estimate: larger than most requests' costs, up to the capacity. */
const estimateArb: fc.Arbitrary<Cost> = fc.oneof(
  fc.integer({ min: 1, max: 6 }),
  fc.constantFrom<Cost>('capacity', 'capacity', 'capacity + 1'),
);

/** What a settlement's actual cost is, relative to the estimate: a refund, the estimate, an overrun, a wrong unit. */
export type Actual = 0 | 'half' | 'estimate' | 'estimate + 1' | 'double' | 'huge';

/** The keys (identities) the ops ask for. */
export const KEYS = ['a', 'b'] as const;

/** Mostly one key, so that what one op leaves the next one meets. */
const on = { instance: fc.constantFrom(0, 1), key: fc.constantFrom('a', 'a', 'a', 'b') };

export type Op =
  | { kind: 'request'; instance: number; key: string; cost: Cost; via: Path }
  | { kind: 'burst'; instance: number; key: string; count: number | 'capacity' }
  | { kind: 'peek'; instance: number; key: string }
  | { kind: 'idle'; instance: number; key: string }
  | { kind: 'reserve'; instance: number; key: string; cost: Cost }
  | { kind: 'settle'; pick: number; actual: Actual; busy: boolean }
  | { kind: 'reset'; instance: number; key: string }
  | { kind: 'operator'; action: OperatorAction; pick: number }
  | { kind: 'deploy'; instance: number; version: number }
  | { kind: 'clock'; instance: number; offsetMs: number }
  | { kind: 'waiters'; instance: number; aborted: number; a: number; b: number; order: number[] };

/**
 * How a request is decided: as a guard decides a route's (the cache of denials first, then the store), or
 * through RateLimitService (always the store).
 */
export type Path = 'guard' | 'service';
const pathArb = fc.constantFrom<Path>('guard', 'service');

/** Each op, and the time that passes before it (ms, on every clock: the instances' and the real one). */
export type TimedOp = Op & { dt: number };

const dtArb = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 500 }), weight: 3 },
  // past the cache of denials' trust, within a window of the longer policies
  { arbitrary: fc.integer({ min: 900, max: 3000 }), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 20_000 }), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 2 * 86_400_000 }), weight: 1 },
);

/** The ops of a run whose instances' clocks differ by at most `skewMs`. */
export function opArb(skewMs: number): fc.Arbitrary<TimedOp> {
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      arbitrary: fc.record({ kind: fc.constant('request' as const), ...on, cost: costArb, via: pathArb }),
      weight: 8,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant('burst' as const),
        ...on,
        count: fc.oneof(fc.integer({ min: 2, max: 8 }), fc.constant<'capacity'>('capacity')),
      }),
      weight: 4,
    },
    { arbitrary: fc.record({ kind: fc.constant('peek' as const), ...on }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('idle' as const), ...on }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('reserve' as const), ...on, cost: estimateArb }), weight: 3 },
    {
      arbitrary: fc.record({
        kind: fc.constant('settle' as const),
        pick: fc.nat(),
        actual: fc.constantFrom<Actual>(0, 0, 'half', 'half', 'estimate', 'estimate + 1', 'double', 'huge'),
        /** Others took what had refilled while the reserved call ran (the B, who takes 1000). */
        busy: fc.boolean(),
      }),
      weight: 4,
    },
    { arbitrary: fc.record({ kind: fc.constant('reset' as const), ...on }), weight: 1 },
    {
      arbitrary: fc.record({
        kind: fc.constant('operator' as const),
        action: fc.constantFrom<OperatorAction>('flush', 'delete-one'),
        pick: fc.nat(),
      }),
      weight: 2,
    },
    {
      arbitrary: fc.record({ kind: fc.constant('deploy' as const), instance: on.instance, version: fc.nat(2) }),
      weight: 2,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant('clock' as const),
        instance: on.instance,
        offsetMs: fc.integer({ min: 0, max: skewMs }),
      }),
      weight: 1,
    },
    {
      arbitrary: fc.record({
        kind: fc.constant('waiters' as const),
        instance: on.instance,
        aborted: fc.integer({ min: 0, max: 4 }),
        a: fc.integer({ min: 1, max: 3 }),
        b: fc.integer({ min: 1, max: 3 }),
        /** A permutation's seed: the order in which the waiters arrive and the aborted ones leave. */
        order: fc.array(fc.nat(), { minLength: 10, maxLength: 10 }),
      }),
      weight: 1,
    },
  );
  return fc.tuple(op, dtArb).map(([o, dt]) => ({ ...o, dt }));
}

/**
 * The skew of a run: most runs on clocks that agree (their admissions are held to the exact bound), some with
 * clocks up to MAX_CLOCK_SKEW_MS apart (the bound widened by the skew).
 */
export const skewArb = fc.oneof(
  { arbitrary: fc.constant(0), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 50 }), weight: 1 },
  { arbitrary: fc.integer({ min: 51, max: MAX_CLOCK_SKEW_MS }), weight: 1 },
);
