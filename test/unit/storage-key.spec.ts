import { createHmac } from 'node:crypto';

import { storageKey, StoredIdentities } from '../../lib/stores/storage-key.js';

// How stores keep identities in their keys: a keyed hash by default (issue 31, "Secrets in the keyspace").

/** The shape of the policy the keys below belong to (lib/policy/state-shape.ts): a fixed window of a minute. */
const SHAPE = 'fw1m';
const hmac = (secret: string, identity: string, shape = SHAPE) =>
  createHmac('sha256', secret).update(`${shape}\0${identity}`).digest('base64url').slice(0, 16);

describe('StoredIdentities', () => {
  it('stores an identity as the first 16 base64url characters (96 bits) of its HMAC-SHA-256', () => {
    const secret = 'a-secret-of-sixteen-or-more';
    const identities = new StoredIdentities('rl:', { identitySecret: secret });
    for (const identity of ['sk_live_SECRET123', 'ip:127.0.0.1', 'user:42', 'ünïcödé', 'a{b}c', 'x'.repeat(10_000)]) {
      expect(identities.of(SHAPE, identity)).toBe(hmac(secret, identity));
      expect(identities.of(SHAPE, identity)).toMatch(/^[A-Za-z0-9_-]{16}$/);
    }
    expect(identities.key({ id: 'api', shape: SHAPE }, 'user:42')).toBe(`rl:{api:${hmac(secret, 'user:42')}}`);
  });

  // Issue 41: a deploy that changes a policy's window under its name must not read the old state.
  it('hashes an identity under each shape of state apart, at the same key length', () => {
    const identities = new StoredIdentities('rl:', {});
    const minute = identities.key({ id: 'api', shape: 'fw1m' }, 'user:42');
    const hour = identities.key({ id: 'api', shape: 'fw1h' }, 'user:42');
    expect(minute).not.toBe(hour);
    expect(minute).toHaveLength(hour.length);
    expect(identities.of('fw1h', 'user:42')).toBe(hmac('nest-rate-limit identities v1\0rl:', 'user:42', 'fw1h'));
  });

  it('without a secret, hashes alike on every instance and after every restart (a constant with the prefix)', () => {
    const one = new StoredIdentities('rl:', {});
    const other = new StoredIdentities('rl:', {});
    expect(one.of(SHAPE, 'sk_live_SECRET123')).toBe(other.of(SHAPE, 'sk_live_SECRET123'));
    expect(one.of(SHAPE, 'sk_live_SECRET123')).toBe(hmac('nest-rate-limit identities v1\0rl:', 'sk_live_SECRET123'));
    // another prefix, other hashes: two apps do not share the hash of one identity
    expect(new StoredIdentities('app:', {}).of(SHAPE, 'sk_live_SECRET123')).not.toBe(
      one.of(SHAPE, 'sk_live_SECRET123'),
    );
    // a secret of your own changes them
    expect(new StoredIdentities('rl:', { identitySecret: 'x'.repeat(16) }).of(SHAPE, 'k')).not.toBe(one.of(SHAPE, 'k'));
  });

  it('answers the same from its memo of recent identities, past its generations too', () => {
    const identities = new StoredIdentities('rl:', {});
    const first = Array.from({ length: 10_000 }, (_, i) => identities.of(SHAPE, `user:${i}`));
    const again = Array.from({ length: 10_000 }, (_, i) => identities.of(SHAPE, `user:${i}`));
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(10_000);
    expect(first[1234]).toBe(hmac('nest-rate-limit identities v1\0rl:', 'user:1234'));
  });

  it('with readableKeys, keeps short plain identities as they are and hashes the others, marked #', () => {
    const identities = new StoredIdentities('rl:', { readableKeys: true });
    expect(identities.of(SHAPE, 'user:42')).toBe('user:42');
    expect(identities.of(SHAPE, 'ip:2001:db8::/64')).toBe('ip:2001:db8::/64');
    expect(identities.of(SHAPE, 'a{b}c')).toBe(`#${hmac('nest-rate-limit identities v1\0rl:', 'a{b}c')}`);
    expect(identities.of(SHAPE, 'x'.repeat(65))).toMatch(/^#[A-Za-z0-9_-]{16}$/);
    // a readable identity never takes the place of another's hash
    const hashOfOther = hmac('nest-rate-limit identities v1\0rl:', 'a{b}c');
    expect(identities.of(SHAPE, hashOfOther)).not.toBe(identities.of(SHAPE, 'a{b}c'));
    expect(storageKey('rl:', { id: 'api', shape: SHAPE }, 'user-42', { readableKeys: true })).toBe(
      'rl:{api|fw1m:user-42}',
    );
  });

  it('refuses a secret too short, or not a string, without showing it', () => {
    for (const identitySecret of ['short-secret', '', 42, null]) {
      let message = '';
      try {
        new StoredIdentities('rl:', { identitySecret: identitySecret as string });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^nest-rate-limit: identitySecret must be a string of at least 16 characters/);
      if (typeof identitySecret !== 'object' && identitySecret !== '')
        expect(message).not.toContain(String(identitySecret));
    }
    expect(() => new StoredIdentities('rl:', { readableKeys: 'yes' as unknown as boolean })).toThrow(
      /readableKeys must be true or false, got "yes"/,
    );
  });
});
