import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

import { SHAPE_SEPARATOR } from '../policy/state-shape.js';

/** Identities `readableKeys` keeps as they are; anything longer or with other characters (braces, spaces, newlines) is hashed. */
const SAFE_IDENTITY = /^[A-Za-z0-9._:@/+=-]{1,64}$/;

/**
 * Characters of a hashed identity: 16 base64url characters, the first 96 bits of the HMAC-SHA-256. Two
 * identities of one policy share a key only when their hashes collide: among n identities that happens with a
 * probability of about n² / 2^97, so for 10^9 identities of one policy about 6 × 10^-12, for 10^10 about
 * 6 × 10^-10 (and a collision makes two identities share a limit: it never admits more). Finding an identity
 * that collides with a given one takes about 2^96 hashes. Why not more: a Redis key of the default prefix, a
 * policy name like `per-user` and a 16-character identity takes 88 bytes (MEMORY USAGE) for most algorithms;
 * from 17 characters it takes 104 (jemalloc's next size class), 18% more memory per key for bits that buy nothing.
 */
const HASH_CHARS = 16;

/**
 * Starts a hashed identity among readable ones (`readableKeys`): no readable identity (SAFE_IDENTITY) holds it,
 * so a client cannot send, as its own identity, the hash of another's. Where every identity is hashed, none needs it.
 */
const HASHED = '#';

/**
 * The secret of the identities' HMAC when the options give none: the same on every instance and after every
 * restart (a secret of each process's own would split one limit into one per instance), so it is a constant,
 * with the key prefix, so that two apps on other prefixes keep other hashes of one identity. Anyone can compute
 * it: it keeps secrets out of the keyspace, but an identity that can be guessed (an email, an IP) can be found
 * from its key by trying candidates. `identitySecret` prevents that.
 */
const DEFAULT_SECRET = 'nest-rate-limit identities v1';

/** Shortest `identitySecret` taken: a secret that can be guessed protects nothing. */
const MIN_SECRET_LENGTH = 16;

/** Identities met before the memo of recent ones starts a new generation. */
const MEMO_SIZE = 4096;
/** Longest identity the memo keeps: longer ones (rare, or hostile) are hashed every time, so the memo stays small. */
const MEMO_MAX_LENGTH = 256;

/** How a store keeps identities in its keys: the store options that say so, beside `keyPrefix`. */
export interface IdentityOptions {
  /** The secret of the identities' HMAC (at least 16 characters); default a constant of the module's with the prefix. */
  identitySecret?: string;
  /** Keep identities readable in keys (short plain ones as they are, others hashed); default false: all hashed. */
  readableKeys?: boolean;
}

/** What a key is made of besides the identity: the policy's id and the shape of its state. */
export interface KeyedPolicy {
  readonly id: string;
  readonly shape: string;
}

/** Two generations of the stored identities met lately under one shape. */
interface Memo {
  recent: Map<string, string>;
  older: Map<string, string>;
}

/**
 * The identities of one store as its keys hold them: by default a keyed hash (HMAC-SHA-256 under the store's
 * secret of the state's shape and the identity, 16 base64url characters), so that no secret a key function
 * returns (an API key) reaches the store, a client can neither inflate memory nor steer Cluster slots with its
 * identity, and a policy whose shape changes under the same name (lib/policy/state-shape.ts) finds none of the
 * old state — at no cost in key bytes. With `readableKeys`, identities of up to 64 letters, digits and
 * `._:@/+=-` stay as they are, and the others are hashed, marked `#`; the key then shows the shape after the id.
 * @example new StoredIdentities('rl:', {}).key({ id: 'api', shape: 'fw1m' }, 'user-42') // 'rl:{api:<16 characters>}'
 */
export class StoredIdentities {
  private readonly secret: KeyObject;
  /** Whether keys show short plain identities (and the shape) as they are: the `readableKeys` option. */
  readonly readable: boolean;
  // Per shape, two generations of the identities met lately: a request of a known identity costs two Map
  // lookups (about 30 ns), not an HMAC (about 1.7 µs); the older generation is dropped whole when the newer one
  // fills, with no per-entry bookkeeping. They hold raw identities, in this process's memory only (as the cache
  // of denials does). An app has a few shapes, so the map of memos stays small.
  private readonly memos = new Map<string, Memo>();

  constructor(
    private readonly keyPrefix: string,
    options: IdentityOptions,
  ) {
    const secret = checkIdentitySecret(options.identitySecret);
    this.secret = createSecretKey(Buffer.from(secret ?? `${DEFAULT_SECRET}\0${keyPrefix}`, 'utf8'));
    const readable = options.readableKeys ?? false;
    if (typeof readable !== 'boolean') {
      throw new TypeError(`nest-rate-limit: readableKeys must be true or false, got ${JSON.stringify(readable)}`);
    }
    this.readable = readable;
  }

  /**
   * The storage key of a policy and identity: `<prefix>{<policy id>:<stored identity>}` (a Cluster hash tag), or
   * with readableKeys `<prefix>{<policy id>|<shape>:<stored identity>}`.
   */
  key(policy: KeyedPolicy, identity: string): string {
    const stored = this.of(policy.shape, identity);
    if (this.readable) return `${this.keyPrefix}{${policy.id}${SHAPE_SEPARATOR}${policy.shape}:${stored}}`;
    return `${this.keyPrefix}{${policy.id}:${stored}}`;
  }

  /** An identity as the store keeps it under a policy of `shape`. */
  of(shape: string, identity: string): string {
    if (this.readable) return SAFE_IDENTITY.test(identity) ? identity : HASHED + this.hash(shape, identity);
    if (identity.length > MEMO_MAX_LENGTH) return this.hash(shape, identity);
    let memo = this.memos.get(shape);
    if (memo === undefined) this.memos.set(shape, (memo = { recent: new Map(), older: new Map() }));
    let stored = memo.recent.get(identity);
    if (stored !== undefined) return stored;
    stored = memo.older.get(identity) ?? this.hash(shape, identity);
    if (memo.recent.size >= MEMO_SIZE) {
      memo.older = memo.recent;
      memo.recent = new Map();
    }
    memo.recent.set(identity, stored);
    return stored;
  }

  // The shape first, then a NUL (which no shape holds): no two pairs of shape and identity hash the same input.
  private hash(shape: string, identity: string): string {
    const hmac = createHmac('sha256', this.secret).update(shape).update('\0').update(identity);
    return hmac.digest('base64url').slice(0, HASH_CHARS);
  }
}

/**
 * The storage key of a policy and identity as a store of `keyPrefix` and `options` writes it (one StoredIdentities
 * a call: for tests and tools; the stores keep theirs). `policy` is a validated policy, or its id and shape.
 * @example storageKey('rl:', validatePolicy(policy), 'user-42', { readableKeys: true }) === 'rl:{api|fw1m:user-42}'
 */
export function storageKey(
  prefix: string,
  policy: KeyedPolicy,
  identity: string,
  options: IdentityOptions = {},
): string {
  return new StoredIdentities(prefix, options).key(policy, identity);
}

/**
 * Checks an `identitySecret`: a string of at least MIN_SECRET_LENGTH characters, or undefined. The error never
 * shows the value (it is a secret): only its type, or its length.
 */
function checkIdentitySecret(secret: unknown): string | undefined {
  if (secret === undefined) return undefined;
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    const got =
      typeof secret === 'string'
        ? `a string of ${secret.length} characters`
        : `${secret === null ? 'null' : `a value of type ${typeof secret}`}`;
    throw new TypeError(
      `nest-rate-limit: identitySecret must be a string of at least ${MIN_SECRET_LENGTH} characters (a random ` +
        `secret, the same on every instance), got ${got}`,
    );
  }
  return secret;
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
