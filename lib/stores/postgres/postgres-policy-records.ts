import type { Pool } from 'pg';

import type { PgPool } from '../client-types.js';
import {
  checkValue,
  parseRecordedPolicy,
  RECORD_KEPT_MS,
  type PolicyRecords,
  type RecordedPolicy,
} from '../policy-records.js';
import type { StoredIdentities } from '../storage-key.js';

/** The table of the recorded policies, as postgresSchemaSql creates it in `S` (a quoted schema). */
export const policyRecordsTableSql = (S: string): string =>
  `CREATE TABLE IF NOT EXISTS ${S}.rate_limit_policy (
  key_prefix text NOT NULL,
  id text NOT NULL,
  shape text NOT NULL,
  record text NOT NULL,
  seen_at bigint NOT NULL,
  PRIMARY KEY (key_prefix, id, shape)
);`;

/**
 * The PostgreSQL store's recorded policies: a row per key prefix, policy id and shape, the record as JSON. Rows no
 * instance has written for RECORD_KEPT_MS are dropped when one records its own.
 */
export class PostgresPolicyRecords implements PolicyRecords {
  readonly check: string;

  // pg's own types inside; the constructor names only the structural PgPool (the published types name no peer).
  private readonly pool: Pool;

  constructor(
    pool: PgPool,
    private readonly S: string,
    private readonly keyPrefix: string,
    identities: StoredIdentities,
  ) {
    this.pool = pool as unknown as Pool;
    this.check = checkValue(identities);
  }

  async record(policies: readonly RecordedPolicy[]): Promise<void> {
    if (policies.length === 0) return;
    await this.pool.query(
      `INSERT INTO ${this.S}.rate_limit_policy (key_prefix, id, shape, record, seen_at)
       SELECT $1, r.id, r.shape, r.record, r.seen_at
       FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS r(id, shape, record, seen_at)
       ON CONFLICT (key_prefix, id, shape) DO UPDATE SET record = EXCLUDED.record, seen_at = EXCLUDED.seen_at`,
      [
        this.keyPrefix,
        policies.map((p) => p.id),
        policies.map((p) => p.shape),
        policies.map((p) => JSON.stringify(p)),
        policies.map((p) => p.seenAt),
      ],
    );
    const oldest = Math.min(...policies.map((p) => p.seenAt)) - RECORD_KEPT_MS;
    await this.pool.query(`DELETE FROM ${this.S}.rate_limit_policy WHERE key_prefix = $1 AND seen_at < $2`, [
      this.keyPrefix,
      oldest,
    ]);
  }

  async list(): Promise<RecordedPolicy[]> {
    const result = await this.pool.query(`SELECT record FROM ${this.S}.rate_limit_policy WHERE key_prefix = $1`, [
      this.keyPrefix,
    ]);
    return (result.rows as { record: string }[])
      .map((row) => parseRecordedPolicy(row.record))
      .filter((r) => r !== undefined);
  }
}
