import fc from 'fast-check';

import { TEST_START_MS } from '../support/time.js';
import { DeployFleet } from './deploy-fleet.js';
import { opArb, skewArb, versionsArb } from './deploy-ops.js';
import type { FuzzBacking } from './fuzz-stores.js';

// Issue 41: production changes things — a deploy changes a policy's shape under its name while old and new
// instances run side by side, clocks disagree (within MAX_CLOCK_SKEW_MS), reservations settle at other costs
// (and wrong units), operators reset keys and flush the store behind the module's back, waiters leave. Two
// instances of the module on one store, driven through RateLimitService on fake clocks, must never ask a client
// to wait longer than the deciding policy ever could (maxWaitMs), never answer from a cached denial longer than
// denyCacheMs after an operator's change, serve waiters in turn after others left, and admit within the bound
// the docs state: each version its own budget (test/fuzz/deploy-ledger.ts says how each is checked).
//
// A failure prints fast-check's seed and path: FC_SEED=<seed> FC_PATH=<path> replays that run (shrunk). One spec
// file a store runs it: deploy-fuzzer-memory.spec.ts, deploy-fuzzer-redis.spec.ts, deploy-fuzzer-postgres.spec.ts.

const replay =
  process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH };

/**
 * Runs per store: each starts two instances and plays up to 30 ops, deploys included (about 0.02 s a run on
 * memory, 0.04 s on Redis, 0.2 s on PostgreSQL, most of it starting instances): about 20 s in all. Memory runs
 * most: a broken rule shows there first (each rule of issue 41 broken on purpose failed this file).
 */
const RUNS: Readonly<Record<string, number>> = { memory: 400, redis: 100, postgres: 50 };
/** A failure shrinks (each step a whole run) for at most this long, then reports the smallest run found. */
const SHRINK_MS = 120_000;

const runArb = fc.record({
  versions: versionsArb,
  run: skewArb.chain((skewMs) =>
    fc.record({
      skewMs: fc.constant(skewMs),
      ops: fc.array(opArb(skewMs), { minLength: 1, maxLength: 30, size: 'max' }),
    }),
  ),
  // where in a day the run's clock starts: windows, days and months begin at other points of it
  offsetMs: fc.integer({ min: 0, max: 86_400_000 }),
});

/** The fuzzer's property on `backing`: its runs (RUNS) of deploys, clocks, settlements, operators and waiters. */
export function describeDeployFuzzer(backing: FuzzBacking): void {
  describe(`deploys, skewed clocks, settlements, operators and waiters on the ${backing.name} store`, () => {
    beforeAll(() => backing.setup());
    afterAll(() => backing.teardown());

    it('never asks for a wait beyond the policy, and admits within one budget of each version', async () => {
      await fc.assert(
        fc.asyncProperty(runArb, async ({ versions, run: { skewMs, ops }, offsetMs }) => {
          const store = await backing.open();
          const fleet = new DeployFleet(store, versions, skewMs, TEST_START_MS + offsetMs);
          try {
            await fleet.start();
            for (const op of ops) await fleet.play(op);
            await fleet.finish();
          } finally {
            await fleet.close();
            await store.close();
          }
        }),
        { numRuns: RUNS[backing.name], interruptAfterTimeLimit: SHRINK_MS, ...replay },
      );
    }, 300_000);
  });
}
