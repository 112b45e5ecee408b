import type { Pool } from 'pg';

import type { PgPool } from '../client-types.js';

/**
 * The store's statements outside decisions, on its schema (`S`, quoted) and key prefix: quota usage for
 * billing, deleting every row of the prefix, and pruning expired rows.
 */
export class PostgresMaintenance {
  // pg's own types inside; the constructor names only the structural PgPool (the published types name no peer).
  private readonly pool: Pool;

  constructor(
    pool: PgPool,
    private readonly S: string,
    private readonly keyPrefix: string,
    private readonly pruneBatch: number,
  ) {
    this.pool = pool as unknown as Pool;
  }

  /** The usage of a quota's storage key in the period that starts at `periodStartMs`. */
  async quotaUsage(storageKey: string, periodStartMs: number): Promise<{ used: number; limit?: number }> {
    const { rows } = await this.pool.query<{ used: string; quota_limit: string }>(
      `SELECT used, quota_limit FROM ${this.S}.rate_limit_quota_usage WHERE key = $1 AND period_start = $2`,
      [storageKey, periodStartMs],
    );
    const [row] = rows;
    return row === undefined ? { used: 0 } : { used: Number(row.used), limit: Number(row.quota_limit) };
  }

  /** Deletes every row under the prefix, quota usage included; resolves with how many went. */
  async resetAll(): Promise<number> {
    const like = `${this.keyPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    let removed = 0;
    for (const table of ['rate_limit_state', 'rate_limit_quota_usage']) {
      const result = await this.pool.query(`DELETE FROM ${this.S}.${table} WHERE key LIKE $1`, [like]);
      removed += result.rowCount ?? 0;
    }
    const overrides = await this.pool.query(`DELETE FROM ${this.S}.rate_limit_override WHERE key_prefix = $1`, [
      this.keyPrefix,
    ]);
    return removed + (overrides.rowCount ?? 0);
  }

  /** Deletes rows expired at `now` (null: the database's clock), a batch at a time, until none is left. */
  async prune(now: number | null): Promise<number> {
    let removed = 0;
    for (;;) {
      const result = await this.pool.query(
        `DELETE FROM ${this.S}.rate_limit_state WHERE key IN (SELECT key FROM ${this.S}.rate_limit_state
           WHERE expires_at <= coalesce($1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) LIMIT $2)`,
        [now, this.pruneBatch],
      );
      removed += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < this.pruneBatch) return removed;
    }
  }
}
