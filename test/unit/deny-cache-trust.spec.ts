import { DENY_CACHE_MS, DenyCache } from '../../lib/engine/coherence/deny-cache.js';
import { validatePolicy } from '../../lib/index.js';
import { DENY_CACHE_TRUST_MS } from '../../lib/stores/engine-store.js';
import { StoredIdentities } from '../../lib/stores/storage-key.js';

// How long a cached denial may answer once state can change through another instance (issue 18, item 2): on
// an injected real time, the module's clock (`nowMs`) kept apart.

const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 3, window: '1m' });
const denied = { allowed: false, policy: 'p', limit: 3, remaining: 0, resetMs: 60_000, retryAfterMs: 60_000 };

/** A cache on its own real time; the feed's rules are tested under a long `trustMs`, which bounds them all. */
function cacheAt(start = 1_000, trustMs = 3_600_000) {
  const time = { real: start };
  const cache = new DenyCache({ maxKeys: 10_000, realNow: () => time.real, trustMs });
  /** A consume that goes out now and is denied: remembered at module time 0. */
  const deny = (key = 'k') => {
    const ticket = cache.begin();
    cache.remember(policy, key, 1, denied, 0, ticket);
    cache.end();
  };
  return { time, cache, deny };
}

describe('the trust of a cached denial', () => {
  it(`answers for ${DENY_CACHE_TRUST_MS} ms after its consume went out without a feed, then asks the store`, () => {
    const { time, cache, deny } = cacheAt();
    deny();
    time.real += DENY_CACHE_TRUST_MS;
    expect(cache.check(policy, 'k', 1, 1)).toMatchObject({ allowed: false });
    time.real += 1;
    expect(cache.check(policy, 'k', 1, 1)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('answers until the denial ends while the feed keeps confirming, and no longer than that once it stops', () => {
    const { time, cache, deny } = cacheAt();
    cache.live(time.real);
    deny();
    for (let i = 0; i < 100; i++) {
      time.real += 250;
      cache.confirmed(time.real - 10);
      expect(cache.check(policy, 'k', 1, i * 250)).toMatchObject({ allowed: false });
    }
    // The feed goes quiet (a connection that hangs): the last confirmation bounds the trust.
    const last = time.real - 10;
    time.real = last + DENY_CACHE_TRUST_MS;
    expect(cache.check(policy, 'k', 1, 30_000)).toMatchObject({ allowed: false });
    time.real += 1;
    expect(cache.check(policy, 'k', 1, 30_000)).toBeUndefined();
  });

  // Issue 41, finding 8: an operator's FLUSHALL is announced by nobody, so the feed keeps confirming.
  it(`answers for at most trustMs (default ${DENY_CACHE_MS} ms), however long the feed keeps confirming`, () => {
    const { time, cache, deny } = cacheAt(1_000, DENY_CACHE_MS);
    cache.live(time.real);
    deny();
    for (let t = 250; t <= DENY_CACHE_MS; t += 250) {
      time.real = 1_000 + t;
      cache.confirmed(time.real - 10);
      expect(cache.check(policy, 'k', 1, t)).toMatchObject({ allowed: false });
    }
    time.real += 1;
    cache.confirmed(time.real - 10);
    expect(cache.check(policy, 'k', 1, DENY_CACHE_MS + 1)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('an older confirmation says nothing new', () => {
    const { time, cache, deny } = cacheAt();
    cache.confirmed(time.real + 5_000);
    cache.confirmed(time.real);
    deny();
    time.real += 5_000 + DENY_CACHE_TRUST_MS;
    expect(cache.check(policy, 'k', 1, 1)).toMatchObject({ allowed: false });
  });

  it('a change forgets the denial of its key only', () => {
    const { cache, deny } = cacheAt();
    deny('k');
    deny('other');
    cache.changed([`${policy.id}\nk`]);
    expect(cache.check(policy, 'k', 1, 1)).toBeUndefined();
    expect(cache.check(policy, 'other', 1, 1)).toMatchObject({ allowed: false });
  });

  // The feed names keys as the store keeps them (a keyed hash: no raw identity travels); the cache keeps the raw
  // identities and finds the denial an announcement names.
  it('a change named as the feed names keys (their keyed hash) forgets the denial of the raw key', () => {
    const identities = new StoredIdentities('rl:', {});
    const time = { real: 1_000 };
    const cache = new DenyCache({ realNow: () => time.real, feedKey: (p, key) => identities.of(p.shape, key) });
    for (const key of ['sk_live_SECRET123', 'other']) cache.remember(policy, key, 1, denied, 0, cache.begin());
    cache.end();
    cache.end();
    cache.changed([`${policy.id}\nsk_live_SECRET123`]); // the raw key names nothing the feed sends
    expect(cache.check(policy, 'sk_live_SECRET123', 1, 1)).toMatchObject({ allowed: false });
    cache.changed([`${policy.id}\n${identities.of(policy.shape, 'sk_live_SECRET123')}`]);
    expect(cache.check(policy, 'sk_live_SECRET123', 1, 1)).toBeUndefined();
    expect(cache.check(policy, 'other', 1, 1)).toMatchObject({ allowed: false });
    // and the reply of a consume out while its key changed is not remembered
    const early = cache.begin();
    cache.forget(policy, 'sk_live_SECRET123');
    cache.remember(policy, 'sk_live_SECRET123', 1, denied, 0, early);
    expect(cache.check(policy, 'sk_live_SECRET123', 1, 1)).toBeUndefined();
    cache.end();
  });

  // The reply of a consume the store decided before a reset may arrive after the reset's announcement.
  it('does not remember the reply of a consume that went out before its key changed', () => {
    const { cache } = cacheAt();
    const early = cache.begin();
    const unrelated = cache.begin();
    cache.changed([`${policy.id}\nk`]);
    const late = cache.begin();
    cache.remember(policy, 'k', 1, denied, 0, early);
    expect(cache.check(policy, 'k', 1, 1)).toBeUndefined();
    cache.remember(policy, 'other', 1, denied, 0, unrelated);
    expect(cache.check(policy, 'other', 1, 1)).toMatchObject({ allowed: false });
    cache.remember(policy, 'k', 1, denied, 0, late);
    expect(cache.check(policy, 'k', 1, 1)).toMatchObject({ allowed: false });
    cache.end();
    cache.end();
    cache.end();
  });

  it('a feed that subscribes again forgets every denial, and the replies of the consumes out then', () => {
    const { time, cache, deny } = cacheAt();
    deny('k');
    const inFlight = cache.begin();
    cache.live(time.real);
    expect(cache.size).toBe(0);
    cache.remember(policy, 'other', 1, denied, 0, inFlight);
    expect(cache.size).toBe(0);
    cache.end();
    deny('k');
    expect(cache.size).toBe(1);
  });

  it('keeps a bounded record of changes: past it, every reply in flight is left unremembered', () => {
    const time = { real: 0 };
    const cache = new DenyCache({ maxKeys: 10, realNow: () => time.real });
    const ticket = cache.begin();
    for (let i = 0; i < 11; i++) cache.changed([`${policy.id}\nchanged-${i}`]);
    cache.remember(policy, 'untouched', 1, denied, 0, ticket);
    expect(cache.size).toBe(0);
    cache.end();
  });
});
