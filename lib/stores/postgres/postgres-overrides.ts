import type { Pool } from 'pg';

import type { PgPool } from '../client-types.js';
import { type OverrideStorage, parseStoredOverride, type StoredOverride } from '../overrides.js';
import type { StoredIdentities } from '../storage-key.js';

/** The table of the overrides, as postgresSchemaSql creates it in `S` (a quoted schema). */
export const overridesTableSql = (S: string): string =>
  // A logged table: an override is configuration an operator set, kept across a crash of the database.
  `CREATE TABLE IF NOT EXISTS ${S}.rate_limit_override (
  key_prefix text NOT NULL,
  policy text NOT NULL,
  identity text NOT NULL,
  override text NOT NULL,
  until bigint,
  PRIMARY KEY (key_prefix, policy, identity)
);`;

/**
 * The PostgreSQL store's overrides: a row per key prefix, policy and stored identity (the store's keyed hash, as
 * in its keys), the override as JSON. A row that is not an override this version reads is skipped.
 */
export class PostgresOverrides implements OverrideStorage {
  // pg's own types inside; the constructor names only the structural PgPool (the published types name no peer).
  private readonly pool: Pool;

  constructor(
    pool: PgPool,
    private readonly S: string,
    private readonly keyPrefix: string,
    private readonly identities: StoredIdentities,
  ) {
    this.pool = pool as unknown as Pool;
  }

  identityOf(shape: string, identity: string): string {
    return this.identities.of(shape, identity);
  }

  async put(override: StoredOverride): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.S}.rate_limit_override (key_prefix, policy, identity, override, until)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (key_prefix, policy, identity) DO UPDATE SET override = EXCLUDED.override, until = EXCLUDED.until`,
      [this.keyPrefix, override.policy, override.identity, JSON.stringify(override), override.until ?? null],
    );
  }

  async remove(policy: string, identity: string): Promise<boolean> {
    const result = await this.pool.query(
      `DELETE FROM ${this.S}.rate_limit_override WHERE key_prefix = $1 AND policy = $2 AND identity = $3`,
      [this.keyPrefix, policy, identity],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async list(): Promise<StoredOverride[]> {
    const result = await this.pool.query(`SELECT override FROM ${this.S}.rate_limit_override WHERE key_prefix = $1`, [
      this.keyPrefix,
    ]);
    return (result.rows as { override: string }[])
      .map((row) => parseStoredOverride(row.override))
      .filter((o) => o !== undefined);
  }
}
