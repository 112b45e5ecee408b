import { type RateLimitDecision, type RateLimitStoreItem, validatePolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { migratedSchema } from '../support/postgres.js';
import { ReferenceStore } from '../support/reference-store.js';
import { storageKeyOf } from '../support/migrations.js';

// The token bucket's and GCRA's twins read the state strings their earlier forms wrote (before 0.1.0, in the
// history of this repository) as the units they had taken: such a row decides as the twin that wrote it would
// have. The rows are written here as those twins left them after three consumes of one unit at START.

const db = migratedSchema('es');
const START = Date.parse('2026-05-10T10:00:00Z');

/** A row of rate_limit_state for `policy`'s key 'u', as an earlier twin wrote it. */
async function writeRow(policy: { readonly id: string; readonly shape: string }, state: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO ${db.schema}.rate_limit_state (key, state, expires_at) VALUES ($1, $2, $3)
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at`,
    [storageKeyOf(policy), state, START + 3_600_000],
  );
}

const stateOf = async (policy: { readonly id: string; readonly shape: string }) =>
  (
    await db.pool.query<{ state: string }>(`SELECT state FROM ${db.schema}.rate_limit_state WHERE key = $1`, [
      storageKeyOf(policy),
    ])
  ).rows[0]?.state;

/** `count` consumes of one unit on key 'u': `policy` in the store, `as` (the same by default) in the reference. */
async function consumes(
  store: { consume(items: RateLimitStoreItem[]): Promise<RateLimitDecision[]> },
  reference: ReferenceStore,
  count: number,
  policy: RateLimitStoreItem['policy'],
  as = policy,
  cost = 1,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    expect(await store.consume([{ policy, key: 'u', cost }])).toEqual(
      await reference.consume([{ policy: as, key: 'u', cost }]),
    );
  }
}

describe('states of the earlier twins', () => {
  it("the token bucket's tokens left and GCRA's TAT in ms (the first twins) decide as the units they had taken", async () => {
    const clock = new FakeClock(START);
    const reference = new ReferenceStore(clock);
    const bucket = validatePolicy({ name: 'bucket', algorithm: 'token-bucket', limit: 6, burst: 4, window: '1m' });
    const cell = validatePolicy({ name: 'cell', algorithm: 'gcra', limit: 6, burst: 4, window: '1m' });
    for (const policy of [bucket, cell]) {
      for (let i = 0; i < 3; i++) await reference.consume([{ policy, key: 'u', cost: 1 }]);
    }
    // tokens left (scaled by the window) and their time; the TAT in ms and its remainder
    await writeRow(bucket, `60000:${START}`);
    await writeRow(cell, `${START + 30_000}:0`);
    clock.advance(5_000); // half a token back
    const store = db.store({ clock, keyPrefix: 'rl:' });
    for (const policy of [bucket, cell]) {
      const decisions: RateLimitDecision[][] = [];
      for (let i = 0; i < 3; i++) decisions.push(await store.consume([{ policy, key: 'u', cost: 1 }]));
      // the last unit of the burst, then denials until the next whole unit is back
      expect(decisions.map(([d]) => [d?.allowed, d?.remaining, d?.retryAfterMs])).toEqual([
        [true, 0, 0],
        [false, 0, 5_000],
        [false, 0, 5_000],
      ]);
      const expected: RateLimitDecision[][] = [];
      for (let i = 0; i < 3; i++) expected.push(await reference.consume([{ policy, key: 'u', cost: 1 }]));
      expect(decisions).toEqual(expected);
    }
    // written back as this version's states: the bucket's units with the limit they drain at, GCRA's TAT in µs
    // (the bucket's 210 000 units at 6 per ms: 35 000 000 µs)
    expect([await stateOf(bucket), await stateOf(cell)]).toEqual([
      `210000@${clock.now()}@6`,
      `${clock.now() * 1000 + 35_000_000}`,
    ]);
  });

  it("the token bucket's units taken without their limit drain at the current limit", async () => {
    const clock = new FakeClock(START);
    const reference = new ReferenceStore(clock);
    const bucket = validatePolicy({ name: 'bucket-2', algorithm: 'token-bucket', limit: 6, burst: 4, window: '1m' });
    for (let i = 0; i < 3; i++) await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    await writeRow(bucket, `180000@${START}`);
    clock.advance(5_000);
    await consumes(db.store({ clock, keyPrefix: 'rl:' }), reference, 2, bucket);
    expect(await stateOf(bucket)).toMatch(/^\d+@\d+@6$/);
  });

  it("GCRA's state written by the token bucket (before GCRA had twins of its own) stands for the TAT it meant", async () => {
    const clock = new FakeClock(START);
    const reference = new ReferenceStore(clock);
    // 10 per second divides 1000 × window: GCRA decides exactly as the token bucket that decided it before
    const source = { name: 'cell-2', limit: 10, burst: 4, window: '1s' } as const;
    const gcra = validatePolicy({ ...source, algorithm: 'gcra' });
    const bucket = validatePolicy({ ...source, algorithm: 'token-bucket' });
    for (let i = 0; i < 3; i++) await reference.consume([{ policy: bucket, key: 'u', cost: 1 }]);
    await writeRow(gcra, `3000@${START}@10`);
    clock.advance(50);
    const store = db.store({ clock, keyPrefix: 'rl:' });
    // the old state still counts (and is kept while the key is denied), then the TAT replaces it
    await consumes(store, reference, 1, gcra, bucket, 2);
    expect(await stateOf(gcra)).toMatch(/^\d+@\d+@10$/);
    await consumes(store, reference, 2, gcra, bucket);
    expect(await stateOf(gcra)).toMatch(/^\d+$/);
    clock.advance(150);
    await consumes(store, reference, 3, gcra, bucket);
  });
});
