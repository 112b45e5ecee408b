import { type OverrideStorage, overrideField, parseStoredOverride, type StoredOverride } from '../overrides.js';
import type { StoredIdentities } from '../storage-key.js';
import type { RedisDriver } from './clients/redis-driver.js';

/**
 * The Redis store's overrides: one hash, `<keyPrefix>overrides`, a field per policy and stored identity, its
 * value the override as JSON. The identity is the store's keyed hash, as in the keys: the hash holds no raw
 * identity. A field that is not an override this version reads (a later layout, an operator's HSET) is skipped.
 */
export class RedisOverrides implements OverrideStorage {
  private readonly key: string;

  constructor(
    private readonly redis: RedisDriver,
    keyPrefix: string,
    private readonly identities: StoredIdentities,
  ) {
    this.key = `${keyPrefix}overrides`;
  }

  identityOf(shape: string, identity: string): string {
    return this.identities.of(shape, identity);
  }

  async put(override: StoredOverride): Promise<void> {
    const field = overrideField(override.policy, override.identity);
    await this.redis.command(['HSET', this.key, field, JSON.stringify(override)], this.key);
  }

  async remove(policy: string, identity: string): Promise<boolean> {
    return Number(await this.redis.command(['HDEL', this.key, overrideField(policy, identity)], this.key)) > 0;
  }

  async list(): Promise<StoredOverride[]> {
    const values = await this.redis.command(['HVALS', this.key], this.key);
    if (!Array.isArray(values)) return [];
    return values.map((value: unknown) => parseStoredOverride(String(value))).filter((o) => o !== undefined);
  }
}
