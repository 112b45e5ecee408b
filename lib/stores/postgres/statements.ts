import type { Pool } from 'pg';

import type { PgPool } from '../client-types.js';

import { columnArrays, type ItemColumns } from './item-columns.js';

/** The operations of rate_limit (a consume goes to rate_limit_consume). */
export type Operation = 'peek' | 'refund' | 'charge' | 'reset' | 'block' | 'unblock';

/**
 * The store's decision statements on its schema (`S`, quoted), each a named statement, parsed and planned
 * once per connection rather than at every decision: rate_limit_consume for every consume (through the
 * batcher), rate_limit for everything else.
 */
export class PostgresStatements {
  private readonly consumeStatement: { name: string; text: string };
  private readonly operationStatement: { name: string; text: string };
  // pg's own types inside (a devDependency); the constructor names only the structural PgPool, so that the
  // published types name no optional peer.
  private readonly pool: Pool;

  constructor(
    pool: PgPool,
    S: string,
    schema: string,
    private readonly ttlSlackMs: number,
  ) {
    this.pool = pool as unknown as Pool;
    this.consumeStatement = {
      name: `nest-rate-limit:consume:${schema}`,
      text: `SELECT ${S}.rate_limit_consume($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) AS r`,
    };
    this.operationStatement = {
      name: `nest-rate-limit:${schema}`,
      text: `SELECT ${S}.rate_limit($1, $2, $3, $4, $5, $6, $7, $8, $9) AS r`,
    };
  }

  /** One rate_limit_consume call with the batcher's values: its reply text. */
  async consume(values: unknown[]): Promise<string | null> {
    const [row] = (await this.pool.query<{ r: string | null }>({ ...this.consumeStatement, values })).rows;
    if (row === undefined) throw new Error('nest-rate-limit: rate_limit_consume returned no row');
    return row.r;
  }

  /** One rate_limit call of `op` on the items' columns at `now` (null: the database's clock): its reply. */
  async operation(op: Operation, columns: ItemColumns, now: number | null): Promise<unknown> {
    const result = await this.pool.query<{ r: string[] }>({
      ...this.operationStatement,
      values: [op, now, this.ttlSlackMs, ...columnArrays(columns)],
    });
    return result.rows[0]?.r;
  }
}
