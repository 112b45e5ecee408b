import { validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  consumeAs010,
  decideAlike,
  earlierSchema,
  expectEntryPointAgrees,
  functionDefinitions,
  schemaFunctions,
  storeOn,
  storageKeyOf,
} from '../support/migrations.js';
import { policyOf } from '../support/policies.js';
import { ReferenceStore } from '../support/reference-store.js';

// A rolling deploy: instances of 0.1.0 and of this version on one schema (CONTRIBUTING.md, "Changing the
// PostgreSQL schema"). Each calls its own functions by name; this version's migration creates 0.1.0's as they
// were, beside its own, and 0.1.0's, run again meanwhile, changes none of this version's.
const db = earlierSchema('./schema-0.1.0.sql');

const clock = new FakeClock(Date.parse('2026-05-10T10:00:00Z'));
const reference = new ReferenceStore(clock);
const policies = ALGORITHMS.map((algorithm) =>
  validatePolicy(policyOf(algorithm, { name: `deploy-${algorithm}`, limit: 6, window: '1m' })),
);

/** A consume of one unit of each policy by an instance of 0.1.0 and one by this version's store, on one key. */
async function bothDecideLikeTheReference(): Promise<void> {
  const store = storeOn(db, clock);
  for (const policy of policies) {
    await expectEntryPointAgrees(() => consumeAs010(db, policy, storageKeyOf(policy), clock.now()), reference, policy);
    await decideAlike(store, reference, policy, 1);
  }
  await store.close();
}

/** The definitions of the functions named `names`, as the schema has them now. */
const definitionsOf = async (names: string[]) => {
  const all = await functionDefinitions(db);
  return Object.fromEntries(names.map((name) => [name, all[name]]));
};

describe('an instance of 0.1.0 and one of this version on one schema', () => {
  it("this version's migration changes none of the functions 0.1.0 calls, and keeps the rows 0.1.0 wrote", async () => {
    for (const policy of policies) {
      await expectEntryPointAgrees(
        () => consumeAs010(db, policy, storageKeyOf(policy), clock.now()),
        reference,
        policy,
      );
    }
    const released = await functionDefinitions(db);
    const store = storeOn(db, clock);
    await store.migrate();
    expect(await definitionsOf(Object.keys(released))).toEqual(released);
    expect((await schemaFunctions(db)).filter((f) => f.n !== 1)).toEqual([]); // no overloads
    for (const policy of policies) await decideAlike(store, reference, policy, 1);
    await store.close();
  });

  it('both decide like the reference on the same keys, each through its own functions', async () => {
    for (let i = 0; i < 4; i++) {
      clock.advance(9_000);
      await bothDecideLikeTheReference();
    }
  });

  it('an instance of 0.1.0 that migrates again meanwhile (it restarts during the deploy) changes none of the functions this version calls', async () => {
    const current = await functionDefinitions(db);
    await db.migrate();
    expect(await functionDefinitions(db)).toEqual(current);
    clock.advance(20_000);
    await bothDecideLikeTheReference();
  });

  it('is run again without a change (every start migrates)', async () => {
    const before = await functionDefinitions(db);
    const store = storeOn(db, clock);
    await store.migrate();
    expect(await functionDefinitions(db)).toEqual(before);
    await store.close();
  });
});
