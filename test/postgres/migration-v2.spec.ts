import { validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  consumeThrough,
  expectEntryPointAgrees,
  decideAlike,
  earlierSchema,
  schemaFunctions,
  stateOf,
  storeOn,
  storageKeyOf,
  strayFunctions,
} from '../support/migrations.js';
import { ReferenceStore } from '../support/reference-store.js';

/** The schema of git 1216cd4 (entry points _v2): token bucket states without the limit they drain at. */
const db = earlierSchema('./schema-1216cd4.sql');
const migratePrevious = db.migrate;

const clock = new FakeClock(Date.parse('2026-11-30T10:00:00Z'));
const reference = new ReferenceStore(clock);
const bucket = validatePolicy({ name: 'bucket', algorithm: 'token-bucket', limit: 6, burst: 4, window: '1m' });
const key = storageKeyOf(bucket);

/** A consume of one item through rate_limit_consume_v2(), as an application of that version sends it. */
const consumeAsBefore = () => consumeThrough(db, 'rate_limit_consume_v2', bucket, key, clock.now());
const state = () => stateOf(db, key);
const store = () => storeOn(db, clock);

const OBSOLETE = /^rl_bucket_(taken|decision|refunded)$|^rl_algo_(decision|refunded)$|^rl_standing$|^rl_consume_item$/;

describe('migrating a schema of the previous version (1216cd4, entry points _v2)', () => {
  it('reads its token bucket states (no limit) as draining at the current limit, and leaves none of its functions', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await consumeAsBefore()).toMatch(/^1,/);
      await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    }
    expect(await state()).toMatch(/^\d+@\d+$/);

    const s = store();
    await s.migrate();
    expect((await schemaFunctions(db)).map((f) => f.proname)).toEqual(
      expect.arrayContaining(['rate_limit_v3', 'rate_limit_consume_v3', 'rate_limit_v2', 'rate_limit_consume_v2']),
    );
    expect(await strayFunctions(db, OBSOLETE)).toEqual([]);
    clock.advance(5_000);
    await decideAlike(s, reference, bucket, 2);
    expect(await state()).toMatch(/^\d+@\d+@6$/);
    await s.close();
  });

  it("leaves its entry point working on this version's twins", async () => {
    clock.advance(1_000);
    await expectEntryPointAgrees(consumeAsBefore, reference, bucket);
    expect(await state()).toMatch(/^\d+@\d+@6$/);
  });

  it('lets an instance of the previous version migrate again meanwhile without replacing what this version calls, then cleans up again', async () => {
    await migratePrevious();
    const s = store();
    clock.advance(10_000);
    await decideAlike(s, reference, bucket, 2);
    await s.migrate();
    expect(await strayFunctions(db, OBSOLETE)).toEqual([]);
    await s.close();
  });
});
