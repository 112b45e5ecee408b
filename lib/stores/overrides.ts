/**
 * An override of a policy's limit for one identity (RateLimitService.override), as the stores keep it: JSON of
 * plain values, the identity as the store keys it (its keyed hash), never as the app gave it.
 */
export interface StoredOverride {
  /** The policy's name (`name@Class.method` for a policy of scope 'route'). */
  readonly policy: string;
  /** The identity as the store keeps it (StoredIdentities.of under `shape`). */
  readonly identity: string;
  /** The shape of the policy the identity was hashed under: every instance hashes request identities alike. */
  readonly shape: string;
  /** The limit in place of the declared one; absent: the declared one. */
  readonly limit?: number;
  /** The burst in place of the declared one (token bucket and GCRA); absent: the declared one. */
  readonly burst?: number;
  /** When it lapses, ms since the epoch; absent: when removed. */
  readonly until?: number;
  readonly reason?: string;
  /** A dry run: decisions follow the declared policy and report what the override would have answered. */
  readonly shadow: boolean;
  /** When it was set, ms since the epoch. */
  readonly setAt: number;
}

/** Where a store keeps the overrides: every instance sharing the store reads the same ones. */
export interface OverrideStorage {
  /** An identity as the store keeps it under a policy of `shape` (its keyed hash, as in the store's keys). */
  identityOf(shape: string, identity: string): string;
  /** Keeps `override`, in place of the one of its policy and identity, if any. */
  put(override: StoredOverride): Promise<void>;
  /** Removes the override of `policy` and a stored `identity`; resolves with whether there was one. */
  remove(policy: string, identity: string): Promise<boolean>;
  /** Every override kept (lapsed ones may be among them: readers compare `until` with their clock). */
  list(): Promise<StoredOverride[]>;
}

/** The field of an override in a store's table of them: its policy and stored identity. */
export const overrideField = (policy: string, identity: string): string => `${policy}\n${identity}`;

/**
 * An override read back from a store, or undefined when the value is not one (written by a later version with
 * another layout, or by hand): a reader skips it rather than apply what it cannot read.
 */
export function parseStoredOverride(text: unknown): StoredOverride | undefined {
  const o = jsonObject(text);
  if (o === undefined) return undefined;
  const optionalCount = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 1);
  const ok =
    typeof o.policy === 'string' &&
    typeof o.identity === 'string' &&
    typeof o.shape === 'string' &&
    optionalCount(o.limit) &&
    optionalCount(o.burst) &&
    (o.until === undefined || Number.isSafeInteger(o.until)) &&
    (o.reason === undefined || typeof o.reason === 'string') &&
    typeof o.shadow === 'boolean' &&
    Number.isSafeInteger(o.setAt);
  return ok ? (o as unknown as StoredOverride) : undefined;
}

/** What a store read back as JSON text, when it is an object; undefined for anything else. */
export function jsonObject(text: unknown): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = typeof text === 'string' ? JSON.parse(text) : text;
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
