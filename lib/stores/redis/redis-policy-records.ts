import {
  checkValue,
  parseRecordedPolicy,
  RECORD_KEPT_MS,
  type PolicyRecords,
  type RecordedPolicy,
  recordField,
} from '../policy-records.js';
import type { StoredIdentities } from '../storage-key.js';
import type { RedisDriver } from './clients/redis-driver.js';

/**
 * The Redis store's recorded policies: one hash, `<keyPrefix>policies`, a field per policy id and shape, its value
 * the record as JSON. Records no instance has written for RECORD_KEPT_MS are dropped when one records its own.
 */
export class RedisPolicyRecords implements PolicyRecords {
  readonly check: string;
  private readonly key: string;

  constructor(
    private readonly redis: RedisDriver,
    keyPrefix: string,
    identities: StoredIdentities,
  ) {
    this.key = `${keyPrefix}policies`;
    this.check = checkValue(identities);
  }

  async record(policies: readonly RecordedPolicy[]): Promise<void> {
    if (policies.length === 0) return;
    const fields = policies.flatMap((p) => [recordField(p), JSON.stringify(p)]);
    await this.redis.command(['HSET', this.key, ...fields], this.key);
    const oldest = Math.min(...policies.map((p) => p.seenAt)) - RECORD_KEPT_MS;
    const stale = (await this.list()).filter((r) => r.seenAt < oldest).map(recordField);
    if (stale.length > 0) await this.redis.command(['HDEL', this.key, ...stale], this.key);
  }

  async list(): Promise<RecordedPolicy[]> {
    const values = await this.redis.command(['HVALS', this.key], this.key);
    if (!Array.isArray(values)) return [];
    return values.map((value: unknown) => parseRecordedPolicy(String(value))).filter((r) => r !== undefined);
  }
}
