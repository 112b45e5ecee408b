import { validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  consumeThrough,
  decideAlike,
  earlierSchema,
  schemaFunctions,
  storeOn,
  storageKeyOf,
  strayFunctions,
} from '../support/migrations.js';
import { ReferenceStore } from '../support/reference-store.js';

/** The schema of the first set-based statements (git 35896cc): no blocks, tokens left in a token bucket's state. */
const db = earlierSchema('./schema-35896cc.sql');
const migratePrevious = db.migrate;

const clock = new FakeClock(Date.parse('2026-06-10T10:00:00Z'));
const reference = new ReferenceStore(clock);
const bucket = validatePolicy({ name: 'bucket', algorithm: 'token-bucket', limit: 6, burst: 4, window: '1m' });
const banned = validatePolicy({ name: 'banned', algorithm: 'fixed-window', limit: 5, window: '1m' });
const key = storageKeyOf;

/** A consume of one item through rate_limit_consume(), as an application of the previous version sends it. */
const consumeAsBefore = (policy: typeof bucket) =>
  consumeThrough(db, 'rate_limit_consume', policy, key(policy), clock.now());
const store = () => storeOn(db, clock);

describe('migrating a schema of the previous version (35896cc)', () => {
  it('adds the block columns, reads its token bucket states as units taken, and leaves none of its functions', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await consumeAsBefore(bucket)).toMatch(/^1,/);
      await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    }
    expect((await schemaFunctions(db)).map((f) => f.proname)).toContain('rl_tb_decision');

    const s = store();
    await s.migrate();
    const { rows: columns } = await db.pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'blocked_until'
        ORDER BY table_name`,
      [db.schema],
    );
    expect(columns.map((c) => c.table_name)).toEqual(['rate_limit_quota_usage', 'rate_limit_state']);
    expect((await schemaFunctions(db)).map((f) => f.proname)).toEqual(
      expect.arrayContaining(['rate_limit_v3', 'rate_limit_consume_v3']),
    );
    expect(await strayFunctions(db, /^rl_tb_|^rl_gcra_(?!\w+_v4$)|^rl_(decision|refunded|save)$/)).toEqual([]);
    clock.advance(5_000);
    await decideAlike(s, reference, bucket, 2);
    await s.close();
  });

  it("leaves its entry point working on this version's twins: its instances see the blocks this version sets", async () => {
    const s = store();
    await s.block([{ policy: banned, key: 'u' }], 60_000);
    // allowed 2: denied and blocked, which the previous version reads as a denial
    expect(await consumeAsBefore(banned)).toBe('2,0,60000,60000');
    expect(await consumeAsBefore(bucket)).toMatch(/^0,/);
    await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    await s.close();
  });

  it('lets an instance of the previous version migrate again meanwhile without replacing what this version calls, then cleans up again', async () => {
    await migratePrevious();
    const s = store();
    expect((await s.consume([{ policy: banned, key: 'u', cost: 1 }]))[0]).toMatchObject({
      allowed: false,
      blocked: true,
      retryAfterMs: 60_000,
    });
    clock.advance(10_000);
    await decideAlike(s, reference, bucket, 2);
    await s.migrate();
    expect(await strayFunctions(db, /^rl_tb_|^rl_consume_one$/)).toEqual([]);
    await s.close();
  });
});
