import { createHash } from 'node:crypto';

/** Identities kept as they are; anything longer or with other characters (braces, spaces, newlines) is hashed. */
const SAFE_IDENTITY = /^[A-Za-z0-9._:@/+=-]{1,64}$/;

/**
 * The storage key of a policy and identity: `<prefix>{<policy>:<identity>}`. The braces are a Redis Cluster
 * hash tag; identities a client could use to inflate memory or steer slots are replaced by a SHA-256 digest.
 * @example storageKey('rl:', 'api', 'user-42') === 'rl:{api:user-42}'
 */
export function storageKey(prefix: string, policyName: string, identity: string): string {
  return `${prefix}{${policyName}:${storedIdentity(identity)}}`;
}

/** An identity as the stores keep it: as it is when short and plain, else `#` and 32 characters of its SHA-256. */
export function storedIdentity(identity: string): string {
  return SAFE_IDENTITY.test(identity)
    ? identity
    : `#${createHash('sha256').update(identity).digest('base64url').slice(0, 32)}`;
}

/** Checks a key prefix: it is written before the hash tag, so it may not hold braces. */
export function checkKeyPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || /[{}\s]/.test(prefix) || prefix.length > 64) {
    throw new TypeError(
      `nest-rate-limit: keyPrefix must be a string of at most 64 characters without braces or spaces, got ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}
