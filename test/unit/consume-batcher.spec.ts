import { ConsumeBatcher } from '../../lib/stores/postgres/consume-batcher.js';
import type { ItemColumns } from '../../lib/stores/postgres/item-columns.js';

/** The keys column of a statement's values (rate_limit_consume_v2's 7th parameter). */
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
    const batcher = new ConsumeBatcher(db.execute, 1000, 2);
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
    const batcher = new ConsumeBatcher(db.execute, 1000, 2);
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
});
