import {
  PostgresRateLimitStore,
  validatePolicy,
  type RateLimitDecision,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { migratedSchema, statementsDuring } from '../support/postgres.js';
import { ReferenceStore } from '../support/reference-store.js';
import { TEST_START_MS } from '../support/time.js';

const db = migratedSchema('b');
const store = (clock: FakeClock | 'store' = new FakeClock(TEST_START_MS)): PostgresRateLimitStore =>
  db.store({ clock });

describe('PostgreSQL consumes that arrive together', () => {
  it('go out several to a statement, and on one key are decided one after the other', async () => {
    const s = store();
    const policy = validatePolicy({ name: 'one-key', algorithm: 'fixed-window', limit: 60, window: '1m' });
    const { result, statements } = await statementsDuring(db.pool, () =>
      Promise.all(Array.from({ length: 100 }, () => s.consume([{ policy, key: 'k', cost: 1 }]))),
    );
    expect(statements.length).toBeLessThan(100 / 4);
    const allowed = result.map((r) => nth(r, 0)).filter((d) => d.allowed);
    // each admitted request saw the one before it: remaining counts down 59, 58, ... 0, once each
    expect(allowed.map((d) => d.remaining).sort((a, b) => b - a)).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));
    expect(result.filter((r) => !nth(r, 0).allowed)).toHaveLength(40);
  });

  it('stay all-or-nothing across keys shared between requests: a request denied by one policy consumes no other', async () => {
    const s = store();
    const perUser = validatePolicy({ name: 'per-user', algorithm: 'token-bucket', limit: 10, window: '1h' });
    const global = validatePolicy({ name: 'global', algorithm: 'sliding-window-counter', limit: 25, window: '1h' });
    const users = ['u1', 'u2', 'u3', 'u4', 'u5'];
    const requests = users.flatMap((user) => Array.from({ length: 8 }, () => user));
    const decisions = await Promise.all(
      requests.map((user) =>
        s.consume([
          { policy: perUser, key: user, cost: 1 },
          { policy: global, key: 'all', cost: 1 },
        ]),
      ),
    );
    const admitted = decisions.filter((pair) => pair.every((d) => d.allowed));
    expect(admitted).toHaveLength(25);
    expect(decisions.filter((pair) => nth(pair, 0).allowed !== nth(pair, 1).allowed && nth(pair, 1).allowed)).toEqual(
      [],
    );
    expect((await s.peek([{ policy: global, key: 'all' }]))[0]?.remaining).toBe(0);
    for (const user of users) {
      const theirs = requests.filter((r, i) => r === user && nth(decisions, i).every((d) => d.allowed)).length;
      expect((await s.peek([{ policy: perUser, key: user }]))[0]?.remaining).toBe(10 - theirs);
    }
  });

  it('decide like the reference when requests of several items are denied in a batch, and when they are allowed', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const wide = validatePolicy({ name: 'wide', algorithm: 'gcra', limit: 5, window: '1m' });
    const narrow = validatePolicy({ name: 'narrow', algorithm: 'fixed-window', limit: 1, window: '1m' });
    const log = validatePolicy({ name: 'log', algorithm: 'sliding-window-log', limit: 3, window: '1m' });
    const request = (user: string): RateLimitStoreItem[] => [
      { policy: wide, key: user, cost: 2 },
      { policy: log, key: user, cost: 1 },
      { policy: narrow, key: user, cost: 1 },
    ];
    const users = Array.from({ length: 24 }, (_, i) => `user-${i}`);
    // every other user has spent the narrow limit already: their requests are denied by it alone
    for (const user of users.filter((_, i) => i % 2 === 0)) {
      for (const target of [s, reference]) await target.consume([{ policy: narrow, key: user, cost: 1 }]);
    }
    // one key per user: the order of the requests within and across statements cannot change a decision
    const actual = await Promise.all(users.map((user) => s.consume(request(user))));
    const expected: RateLimitDecision[][] = [];
    for (const user of users) expected.push(await reference.consume(request(user)));
    expect(actual).toEqual(expected);
    const peeks = (target: PostgresRateLimitStore | ReferenceStore) =>
      Promise.all(users.map((user) => target.peek(request(user))));
    expect(await peeks(s)).toEqual(await peeks(reference));
  });

  it('decide a request with two items on one key like the reference (the general function)', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const policy = validatePolicy({ name: 'twice', algorithm: 'sliding-window-counter', limit: 5, window: '1m' });
    const twice = (first: number, second: number): RateLimitStoreItem[] => [
      { policy, key: 'k', cost: first },
      { policy, key: 'k', cost: second },
    ];
    for (const [first, second] of [
      [2, 2],
      [1, 3],
      [0, 1],
      [1, 0],
    ] as const) {
      clock.advance(7000);
      expect(await s.consume(twice(first, second))).toEqual(await reference.consume(twice(first, second)));
    }
  });

  it('decide requests that hold a key more than once like the reference, in statements with others (shadows, blocks, quotas)', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const s = store(clock);
    const reference = new ReferenceStore(clock);
    const log = validatePolicy({ name: 'log', algorithm: 'sliding-window-log', limit: 4, window: '1m', block: '20s' });
    const bucket = validatePolicy({ name: 'bucket', algorithm: 'token-bucket', limit: 3, window: '1m' });
    const daily = validatePolicy({ name: 'daily', algorithm: 'quota', limit: 6, period: 'day', block: '1h' });
    const request = (user: string, i: number): RateLimitStoreItem[] => [
      { policy: log, key: user, cost: 1 + (i % 2) },
      { policy: bucket, key: user, cost: 1 },
      { policy: log, key: user, cost: i % 3, shadow: i % 4 === 3 },
      { policy: daily, key: user, cost: 1 },
      { policy: daily, key: user, cost: 1 + (i % 2) },
    ];
    const users = ['a', 'b', 'c'];
    const seen: RateLimitDecision[] = [];
    for (let turn = 0; turn < 5; turn++) {
      // each user's requests in arrival order, some of one item beside them: several rounds per statement
      const batch = users.flatMap((user, u) => [
        request(user, turn + u),
        [{ policy: bucket, key: user, cost: 1 }],
        request(user, turn + u + 1),
      ]);
      const { result: actual, statements } = await statementsDuring(db.pool, () =>
        Promise.all(batch.map((items) => s.consume(items))),
      );
      expect(statements.length).toBeLessThan(batch.length);
      const expected: RateLimitDecision[][] = [];
      for (const items of batch) expected.push(await reference.consume(items));
      expect(actual).toEqual(expected);
      seen.push(...expected.flat());
      const peeks = (target: PostgresRateLimitStore | ReferenceStore) =>
        Promise.all(batch.map((items) => target.peek(items)));
      expect(await peeks(s)).toEqual(await peeks(reference));
      clock.advance(15_000);
    }
    // the sequence went through allowed requests, denials and blocks
    expect(new Set(seen.map((d) => (d.blocked === true ? 'blocked' : String(d.allowed))))).toEqual(
      new Set(['true', 'false', 'blocked']),
    );
  });

  it('take their time from the database with clock: "store"', async () => {
    const s = store('store');
    const policy = validatePolicy({ name: 'db-clock', algorithm: 'gcra', limit: 50, window: '1h' });
    const decisions = await Promise.all(
      Array.from({ length: 80 }, (_, i) => s.consume([{ policy, key: `k${i % 4}`, cost: 1 }])),
    );
    expect(decisions.filter((r) => nth(r, 0).allowed)).toHaveLength(80);
    const remaining = await s.peek(['k0', 'k1', 'k2', 'k3'].map((key) => ({ policy, key })));
    expect(remaining.map((d) => d.remaining)).toEqual([30, 30, 30, 30]);
  });
});
