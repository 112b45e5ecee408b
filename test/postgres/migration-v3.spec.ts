import { type PostgresRateLimitStore, validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  consumeThrough,
  expectEntryPointAgrees,
  earlierSchema,
  schemaFunctions,
  stateOf,
  storeOn,
  storageKeyOf,
  strayFunctions,
} from '../support/migrations.js';
import { ReferenceStore } from '../support/reference-store.js';

/** The schema of git 53dd862 (entry points _v3): GCRA decided as a token bucket, "<taken>@<at>@<limit>". */
const db = earlierSchema('./schema-53dd862.sql');
const migratePrevious = db.migrate;

const clock = new FakeClock(Date.parse('2026-12-03T10:00:00Z'));
const reference = new ReferenceStore(clock);
// 10 per second divides 1000 × window: GCRA decides exactly as the token bucket that decided it before, so the
// reference is the bucket's, all along
const source = { name: 'cell', limit: 10, burst: 4, window: '1s' } as const;
const gcra = validatePolicy({ ...source, algorithm: 'gcra' });
const bucket = validatePolicy({ ...source, algorithm: 'token-bucket' });
const key = storageKeyOf(gcra);

/** A consume of one item through rate_limit_consume_v3(), as an application of that version sends it. */
const consumeAsBefore = () => consumeThrough(db, 'rate_limit_consume_v3', gcra, key, clock.now());
const state = () => stateOf(db, key);

/** `count` consumes of `cost` on key 'u': GCRA in `s`, the token bucket in the reference, which decide alike. */
async function alike(s: PostgresRateLimitStore, count: number, cost = 1): Promise<void> {
  for (let i = 0; i < count; i++) {
    expect(await s.consume([{ policy: gcra, key: 'u', cost }])).toEqual(
      await reference.consume([{ policy: bucket, key: 'u', cost }]),
    );
  }
}

const store = () => storeOn(db, clock);

const OBSOLETE = /^rl_algo_(decision|refunded)_v3$|^rl_standing_v3$|^rl_consume_item_v3$/;

describe('migrating a schema of the previous version (53dd862, entry points _v3)', () => {
  it("reads its GCRA states (a token bucket's units taken) as the TAT they stand for, and leaves none of its functions", async () => {
    for (let i = 0; i < 3; i++) {
      expect(await consumeAsBefore()).toMatch(/^1,/);
      await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    }
    expect(await state()).toMatch(/^\d+@\d+@10$/);

    const s = store();
    await s.migrate();
    expect((await schemaFunctions(db)).map((f) => f.proname)).toEqual(
      expect.arrayContaining(['rate_limit_v4', 'rate_limit_consume_v4', 'rate_limit_v3', 'rate_limit_consume_v3']),
    );
    expect(await strayFunctions(db, OBSOLETE)).toEqual([]);
    clock.advance(50);
    // the old state still counts (and is kept while the key is denied), then the TAT replaces it
    await alike(s, 1, 2);
    expect(await state()).toMatch(/^\d+@\d+@10$/);
    await alike(s, 2, 1);
    expect(await state()).toMatch(/^\d+$/);
    clock.advance(150);
    await alike(s, 3);
    await s.close();
  });

  it("leaves its entry point working on this version's twins", async () => {
    clock.advance(100);
    await expectEntryPointAgrees(consumeAsBefore, reference, bucket);
    expect(await state()).toMatch(/^\d+$/);
  });

  it('lets an instance of the previous version migrate again meanwhile without replacing what this version calls, then cleans up again', async () => {
    await migratePrevious();
    const s = store();
    clock.advance(1_000);
    await alike(s, 2);
    expect(await state()).toMatch(/^\d+$/);
    await s.migrate();
    expect(await strayFunctions(db, OBSOLETE)).toEqual([]);
    await s.close();
  });
});
