import { MemoryRateLimitStore, validatePolicy } from '../../lib/index.js';
import { RECENT_KEY_MAX_LENGTH, RecentKeys } from '../../lib/stores/memory/recent-keys.js';
import { FakeClock } from '../../lib/testing/index.js';

describe('RecentKeys: the memory store remembers the keys of recent identities, bounded', () => {
  it('holds at most twice its generation size, however many identities come', () => {
    const keys = new RecentKeys(8);
    for (let i = 0; i < 1000; i++) keys.set(`u${i}`, `key-${i}`);
    expect(keys.held).toBeLessThanOrEqual(16);
    // the latest are remembered, the oldest forgotten
    expect(keys.get('u999')).toBe('key-999');
    expect(keys.get('u0')).toBeUndefined();
  });

  it('keeps an identity met again: a get from the older generation moves it to the newer one', () => {
    const keys = new RecentKeys(2);
    keys.set('a', 'A');
    keys.set('b', 'B');
    keys.set('c', 'C'); // a and b are the older generation now
    expect(keys.get('a')).toBe('A'); // moved to the newer generation (with c)
    keys.set('d', 'D'); // the newer generation (c, a) becomes the older
    expect(keys.get('a')).toBe('A');
    expect(keys.get('b')).toBeUndefined();
  });

  it('does not remember identities longer than RECENT_KEY_MAX_LENGTH', () => {
    const keys = new RecentKeys(4);
    const long = 'x'.repeat(RECENT_KEY_MAX_LENGTH + 1);
    keys.set(long, 'K');
    expect(keys.get(long)).toBeUndefined();
    expect(keys.held).toBe(0);
  });

  it('gives the store the same decisions with the memo as without: a key remembered is the key built', async () => {
    const clock = new FakeClock(0);
    const store = new MemoryRateLimitStore({ clock });
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 3, window: '1m' });
    const remaining: number[] = [];
    for (let i = 0; i < 4; i++) {
      const [decision] = await store.consume([{ policy, key: 'user:1', cost: 1 }]);
      remaining.push(decision?.remaining ?? -1);
    }
    expect(remaining).toEqual([2, 1, 0, 0]);
    expect(store.size).toBe(1);
  });
});
