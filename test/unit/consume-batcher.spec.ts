import { jest } from '@jest/globals';

import { ConsumeBatcher } from '../../lib/stores/postgres/consume-batcher.js';
import type { ItemColumns } from '../../lib/stores/postgres/item-columns.js';

/** The keys column of a statement's values (rate_limit_consume_v3's 7th parameter). */
const KEYS = 6;

/** A request of one item per key. */
function request(...keys: string[]): ItemColumns {
  const each = (value: number) => keys.map(() => value);
  return {
    keys,
    algos: each(1),
    limits: each(10),
    windows: each(60_000),
    capacities: each(10),
    costs: each(1),
    shadows: null,
    blocks: null,
  };
}

/** A fake database: records each statement's keys and answers it when the test says so. */
function fakeDatabase() {
  const statements: { keys: string[]; answer(): void }[] = [];
  const execute = (values: unknown[]) =>
    new Promise<string>((resolve) => {
      const keys = values[KEYS] as string[];
      statements.push({ keys, answer: () => resolve(keys.map(() => '1,9,60000,0').join(',')) });
    });
  return { statements, execute };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Regression: two statements in flight on one key could take its lock in either order, so a later request
 * was sometimes decided before an earlier one on the same key (test/postgres/shadows-and-blocks.spec.ts
 * failed now and then under load: its 12 requests on one key went out as two statements of 6).
 */
describe('the PostgreSQL consume batcher', () => {
  it('never has two statements in flight that share a key: a request waits for the statement holding its key', async () => {
    const db = fakeDatabase();
    const batcher = new ConsumeBatcher(db.execute, 1000, 2, 5000);
    const order: string[] = [];
    const consume = (name: string, ...keys: string[]) =>
      batcher.consume(request(...keys), 0).then(() => order.push(name));

    const first = consume('first k', 'k');
    await turn();
    const second = consume('second k', 'k');
    const other = consume('j', 'j');
    await turn();
    // 'j' went out beside the statement in flight; the second request on 'k' waits for it.
    expect(db.statements.map((s) => s.keys)).toEqual([['k'], ['j']]);

    db.statements[1]?.answer();
    await other;
    expect(db.statements).toHaveLength(2);
    db.statements[0]?.answer();
    await first;
    await turn();
    expect(db.statements.map((s) => s.keys)).toEqual([['k'], ['j'], ['k']]);
    db.statements[2]?.answer();
    await second;
    expect(order).toEqual(['j', 'first k', 'second k']);
  });

  it('splits what arrives together into two statements only along keys they do not share', async () => {
    const db = fakeDatabase();
    const batcher = new ConsumeBatcher(db.execute, 1000, 2, 5000);
    // 12 requests on one key, and two on keys of their own, in one turn of the event loop.
    const all = [
      ...Array.from({ length: 12 }, () => batcher.consume(request('k'), 0)),
      batcher.consume(request('a'), 0),
      batcher.consume(request('b', 'k'), 0),
      batcher.consume(request('c'), 0),
    ];
    await turn();
    // The first statement takes half of the queue (8 on 'k'); the second only what shares no key with it
    // ('a', 'c'; not 'b', which shares 'k'), so 'k' is in one statement at a time and keeps its order.
    expect(db.statements.map((s) => s.keys)).toEqual([Array(8).fill('k'), ['a', 'c']]);
    db.statements[0]?.answer();
    db.statements[1]?.answer();
    await turn();
    // The rest in one statement, in rounds: the 4 on 'k' one after the other, then 'b'+'k'.
    expect(db.statements[2]?.keys).toEqual(['k', 'k', 'k', 'k', 'b', 'k']);
    db.statements[2]?.answer();
    await expect(Promise.all(all)).resolves.toHaveLength(15);
  });

  // Regression (review): a statement that never ends held its keys for ever, and the requests queued behind
  // it were sent once it ended, charged although the limiter had long answered them.
  describe('with a statement that does not end', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('refuses a request that waited queueTimeoutMs for it, and never sends it', async () => {
      const db = fakeDatabase();
      const batcher = new ConsumeBatcher(db.execute, 1000, 2, 100);
      void batcher.consume(request('k'), 0);
      await Promise.resolve();
      const waiting = batcher.consume(request('k'), 0);
      const refused = expect(waiting).rejects.toThrow(
        'nest-rate-limit: a PostgreSQL consume waited 100 ms for a statement (queueTimeoutMs)',
      );
      await jest.advanceTimersByTimeAsync(99);
      expect(db.statements).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(2);
      await refused;
      db.statements[0]?.answer();
      await jest.advanceTimersByTimeAsync(10);
      expect(db.statements.map((s) => s.keys)).toEqual([['k']]);
    });
  });

  // Regression (an app overloaded by its own traffic, on PostgreSQL): the wait was counted from the moment a
  // request was queued, so time the loop spent on other work before reading a statement's reply refused
  // requests — their fail mode — with the database healthy.
  it('counts only the store time: a request queued while the loop was busy goes out when a statement ends', async () => {
    const db = fakeDatabase();
    const batcher = new ConsumeBatcher(db.execute, 1000, 1, 100);
    void batcher.consume(request('a'), 0);
    await turn();
    const second = batcher.consume(request('b'), 0);
    // the app busy with other requests for longer than queueTimeoutMs, then the statement's reply is read
    const until = performance.now() + 150;
    while (performance.now() < until);
    db.statements[0]?.answer();
    await turn();
    expect(db.statements.map((s) => s.keys)).toEqual([['a'], ['b']]);
    db.statements[1]?.answer();
    await expect(second).resolves.toEqual(['1', '9', '60000', '0']);
  });

  it('fails a request whose columns do not line up, and goes on with the others', async () => {
    const db = fakeDatabase();
    const batcher = new ConsumeBatcher(db.execute, 1000, 2, 5000);
    const broken = { ...request('k'), algos: [] };
    await expect(batcher.consume(broken, 0)).rejects.toThrow('the algos column has no element 0');
    const next = batcher.consume(request('k'), 0);
    await turn();
    db.statements[0]?.answer();
    await expect(next).resolves.toEqual(['1', '9', '60000', '0']);
  });
});
