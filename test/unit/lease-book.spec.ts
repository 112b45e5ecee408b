import { RateLimitPolicyError, validatePolicy, type RateLimitDecision } from '../../lib/index.js';
import { LeaseBook, leaseLifetimeMs, MAX_LEASED_KEYS } from '../../lib/engine/leases/lease-book.js';
import { StoredIdentities } from '../../lib/stores/storage-key.js';

const windowPolicy = validatePolicy({ name: 'hot', algorithm: 'fixed-window', limit: 100, window: 1000, lease: 10 });

const taken = (fields: Partial<RateLimitDecision>): RateLimitDecision => ({
  allowed: true,
  policy: 'hot',
  limit: 100,
  remaining: 50,
  resetMs: 400,
  retryAfterMs: 0,
  ...fields,
});

describe('leaseLifetimeMs: how long taken units stay spendable', () => {
  it('window algorithms: until the window (or period) the store counted them in ends', () => {
    expect(leaseLifetimeMs(windowPolicy, taken({ resetMs: 400 }), 10)).toBe(400);
    const quota = validatePolicy({ name: 'q', algorithm: 'quota', period: 'day', limit: 10, lease: 5 });
    expect(leaseLifetimeMs(quota, taken({ resetMs: 3_600_000 }), 5)).toBe(3_600_000);
    // a sliding window counter's reset is the end of the next window: the units lapse a window earlier
    const counter = validatePolicy({ algorithm: 'sliding-window-counter', limit: 100, window: 1000, lease: 10 });
    expect(leaseLifetimeMs(counter, taken({ resetMs: 1400 }), 10)).toBe(400);
  });

  it('buckets: while the bucket before the take was from full (one unit kept in hand), never with a full one', () => {
    const bucket = validatePolicy({ algorithm: 'token-bucket', limit: 10, window: 1000, burst: 20, lease: 5 });
    // 20 - remaining 3 - granted 5 - 1 = 11 units below full at 100 ms a unit
    expect(leaseLifetimeMs(bucket, taken({ remaining: 3 }), 5)).toBe(1100);
    // the bucket was full (or one unit short): the units must be spent at once
    expect(leaseLifetimeMs(bucket, taken({ remaining: 15 }), 5)).toBe(0);
    expect(leaseLifetimeMs(bucket, taken({ remaining: 14 }), 5)).toBe(0);
    const gcra = validatePolicy({ algorithm: 'gcra', limit: 3, window: 1000, lease: 2 });
    expect(leaseLifetimeMs(gcra, taken({ remaining: 0 }), 2)).toBe(0);
    expect(leaseLifetimeMs(validatePolicy({ ...gcra.source, burst: 9 } as never), taken({ remaining: 0 }), 2)).toBe(
      Math.floor((6 * 1000) / 3),
    );
  });
});

describe('LeaseBook', () => {
  it('spends what a take got beyond its cost until the lease lapses, then asks the store again', () => {
    const book = new LeaseBook();
    expect(book.spend(windowPolicy, 'k', 1, 0)).toBeUndefined();
    // a key's first take asks for one unit: it is not hot here yet
    expect(book.askFor(windowPolicy, 'k', 1, 0)).toBe(1);
    book.took(windowPolicy, 'k', 1, taken({ granted: 10, remaining: 50, resetMs: 400 }), 0);
    const spent = Array.from({ length: 9 }, (_, i) => book.spend(windowPolicy, 'k', 1, 100 + i));
    expect(spent.every((d) => d?.allowed === true)).toBe(true);
    // r: the units left here and what the store had left at the take
    expect(spent.map((d) => d?.remaining)).toEqual([58, 57, 56, 55, 54, 53, 52, 51, 50]);
    expect(spent[0]?.resetMs).toBe(300);
    expect(book.spend(windowPolicy, 'k', 1, 200)).toBeUndefined();
  });

  it('lets units lapse with their window: none is spent at or after the lease ends', () => {
    const book = new LeaseBook();
    book.took(windowPolicy, 'k', 1, taken({ granted: 10, resetMs: 400 }), 1000);
    expect(book.spend(windowPolicy, 'k', 1, 1399)).toBeDefined();
    expect(book.spend(windowPolicy, 'k', 1, 1400)).toBeUndefined();
  });

  it('gives back what a refused request spent, and spends no more than it holds for a larger cost', () => {
    const book = new LeaseBook();
    book.took(windowPolicy, 'k', 2, taken({ granted: 5 }), 0);
    expect(book.spend(windowPolicy, 'k', 4, 1)).toBeUndefined();
    expect(book.spend(windowPolicy, 'k', 3, 1)).toBeDefined();
    expect(book.spend(windowPolicy, 'k', 1, 1)).toBeUndefined();
    book.unspend(windowPolicy, 'k', 3);
    expect(book.spend(windowPolicy, 'k', 3, 2)).toBeDefined();
  });

  it("grows a hot key's takes (doubling up to the lease) and shrinks them when units lapse unspent", () => {
    const book = new LeaseBook();
    const sizes: number[] = [];
    let now = 0;
    for (let i = 0; i < 6; i++) {
      const ask = book.askFor(windowPolicy, 'k', 1, now);
      sizes.push(ask);
      book.settled(windowPolicy, 'k');
      book.took(windowPolicy, 'k', 1, taken({ granted: ask, resetMs: 10_000 }), now);
      while (book.spend(windowPolicy, 'k', 1, now) !== undefined) now += 1;
    }
    expect(sizes).toEqual([1, 2, 4, 8, 10, 10]);
    // a lease that lapses with units left halves the next take
    book.took(windowPolicy, 'k', 1, taken({ granted: 10, resetMs: 5 }), now);
    expect(book.askFor(windowPolicy, 'k', 1, now + 5)).toBe(5);
  });

  it('takes one at a time per key: requests meanwhile wait for it, or take their cost only (regression: concurrent takes hoarded)', async () => {
    // Eight requests in flight on one instance each took a lease: the instance held eight leases of the key
    // while the others were refused, far beyond the under-admission of instances × lease.
    const book = new LeaseBook();
    // the key is hot: a lease still running ran out, so its next take asks for twice the last one's size
    book.took(windowPolicy, 'k', 1, taken({ granted: 4 }), 0);
    while (book.spend(windowPolicy, 'k', 1, 0) !== undefined);
    expect(book.pending(windowPolicy, 'k', 1, 0)).toBeUndefined();
    expect(book.askFor(windowPolicy, 'k', 1, 0)).toBe(2);
    const pending = book.pending(windowPolicy, 'k', 1, 0);
    expect(pending).toBeInstanceOf(Promise);
    expect(book.askFor(windowPolicy, 'k', 1, 0)).toBe(1);
    expect(book.askFor(windowPolicy, 'k', 3, 0)).toBe(3);
    // a take of its cost alone that comes back meanwhile leaves the take for more on its way
    book.took(windowPolicy, 'k', 1, taken({}), 0);
    expect(book.askFor(windowPolicy, 'k', 1, 0)).toBe(1);
    book.settled(windowPolicy, 'k');
    await expect(pending).resolves.toBeUndefined();
    expect(book.askFor(windowPolicy, 'k', 1, 0)).toBe(4);
  });

  it('forgets a key changed elsewhere, and every key when the feed was lost', () => {
    const book = new LeaseBook();
    book.took(windowPolicy, 'a', 1, taken({ granted: 5 }), 0);
    book.took(windowPolicy, 'b', 1, taken({ granted: 5 }), 0);
    book.forget(`${windowPolicy.id}\na`);
    expect(book.spend(windowPolicy, 'a', 1, 1)).toBeUndefined();
    expect(book.spend(windowPolicy, 'b', 1, 1)).toBeDefined();
    book.forgetAll();
    expect(book.size).toBe(0);
  });

  it('finds the key an announcement names as the feed does (its keyed hash), never by the raw identity', () => {
    const identities = new StoredIdentities('rl:', {});
    const book = new LeaseBook(MAX_LEASED_KEYS, (p, key) => identities.of(p.shape, key));
    book.took(windowPolicy, 'sk_live_a', 1, taken({ granted: 5 }), 0);
    book.took(windowPolicy, 'b', 1, taken({ granted: 5 }), 0);
    book.forget(`${windowPolicy.id}\nsk_live_a`);
    expect(book.spend(windowPolicy, 'sk_live_a', 1, 1)).toBeDefined();
    book.forget(`${windowPolicy.id}\n${identities.of(windowPolicy.shape, 'sk_live_a')}`);
    expect(book.spend(windowPolicy, 'sk_live_a', 1, 1)).toBeUndefined();
    expect(book.spend(windowPolicy, 'b', 1, 1)).toBeDefined();
  });

  it(`remembers at most ${MAX_LEASED_KEYS} keys by default: the lapsed ones go first, then the oldest`, () => {
    const book = new LeaseBook(3);
    book.took(windowPolicy, 'lapsed', 1, taken({ granted: 5, resetMs: 1 }), 0);
    for (const key of ['a', 'b', 'c']) book.took(windowPolicy, key, 1, taken({ granted: 5 }), 10);
    expect(book.size).toBe(3);
    expect(book.spend(windowPolicy, 'a', 1, 11)).toBeDefined();
    book.took(windowPolicy, 'd', 1, taken({ granted: 5 }), 12);
    expect(book.size).toBe(3);
    expect(book.spend(windowPolicy, 'a', 1, 13)).toBeUndefined();
  });
});

describe('validatePolicy: lease', () => {
  const fails = (policy: object): string => {
    try {
      validatePolicy(policy as never, 'TenantController.generate');
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitPolicyError);
      return (error as Error).message;
    }
    throw new Error('validatePolicy accepted it');
  };

  it('keeps the lease of the algorithms that can take units ahead', () => {
    for (const algorithm of ['fixed-window', 'sliding-window-counter', 'token-bucket', 'gcra'] as const) {
      expect(validatePolicy({ algorithm, limit: 100, window: '1s', lease: 10 }).lease).toBe(10);
    }
    expect(validatePolicy({ algorithm: 'quota', period: 'day', limit: 100, lease: 10 }).lease).toBe(10);
    expect(validatePolicy({ algorithm: 'gcra', limit: 100, window: '1s' }).lease).toBeUndefined();
  });

  it.each([
    [{ algorithm: 'fixed-window', limit: 10, window: 1000, lease: 1 }, /lease.*integer >= 2.*got 1/],
    [{ algorithm: 'fixed-window', limit: 10, window: 1000, lease: '10' }, /lease.*a string: use Number/],
    [
      { algorithm: 'sliding-window-log', limit: 10, window: 1000, lease: 5 },
      /lease.*does not apply to sliding-window-log/,
    ],
    [{ algorithm: 'concurrency', limit: 10, window: 1000, lease: 5 }, /lease.*does not apply to concurrency/],
    [{ algorithm: 'gcra', limit: 10, window: 1000, lease: 5, count: 'failed' }, /lease.*does not combine with count/],
    [{ algorithm: 'gcra', limit: 10, window: 1000, lease: 5, block: '1m' }, /lease.*does not combine with block/],
  ])('refuses %j, naming where it is declared', (policy, message) => {
    const text = fails(policy);
    expect(text).toMatch(message);
    expect(text).toMatch(/TenantController\.generate/);
  });
});
