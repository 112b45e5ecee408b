import type { Pool } from 'pg';

import type { PgPool } from '../client-types.js';

import { columnArrays, type ItemColumns } from './item-columns.js';

/** The operations of rate_limit_v4 that the store sends (a consume goes to rate_limit_consume_v4). */
export type Operation = 'peek' | 'refund' | 'reset' | 'block' | 'unblock';

/**
 * The store's decision statements on its schema (`S`, quoted), each a named statement, parsed and planned
 * once per connection rather than at every decision: rate_limit_consume_v4 for every consume (through the batcher),
 * rate_limit_charge_v4 for charges, and rate_limit_v4 for everything else.
 */
export class PostgresStatements {
  private readonly consumeStatement: { name: string; text: string };
  private readonly operationStatement: { name: string; text: string };
  private readonly chargeStatement: { name: string; text: string };
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
      name: `nest-rate-limit:consume:v2:${schema}`,
      text: `SELECT ${S}.rate_limit_consume_v4($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) AS r`,
    };
    this.operationStatement = {
      name: `nest-rate-limit:v2:${schema}`,
      text: `SELECT ${S}.rate_limit_v4($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) AS r`,
    };
    this.chargeStatement = {
      name: `nest-rate-limit:charge:v1:${schema}`,
      text: `SELECT ${S}.rate_limit_charge_v4($1, $2, $3, $4, $5, $6, $7, $8, $9) AS r`,
    };
  }

  /** One rate_limit_charge_v4 call on the items' columns at `now` (null: the database's clock): its reply. */
  async charge(columns: ItemColumns, now: number | null): Promise<unknown> {
    const result = await this.pool.query<{ r: string[] }>({
      ...this.chargeStatement,
      values: [now, this.ttlSlackMs, ...columnArrays(columns), columns.shadows],
    });
    return result.rows[0]?.r;
  }

  /** One rate_limit_consume_v4 call with the batcher's values: its reply text. */
  async consume(values: unknown[]): Promise<string | null> {
    const [row] = (await this.pool.query<{ r: string | null }>({ ...this.consumeStatement, values })).rows;
    if (row === undefined) throw new Error('nest-rate-limit: rate_limit_consume_v4 returned no row');
    return row.r;
  }

  /** One rate_limit_v4 call of `op` on the items' columns at `now` (null: the database's clock): its reply. */
  async operation(op: Operation, columns: ItemColumns, now: number | null): Promise<unknown> {
    const result = await this.pool.query<{ r: string[] }>({
      ...this.operationStatement,
      values: [op, now, this.ttlSlackMs, ...columnArrays(columns), null, null],
    });
    return result.rows[0]?.r;
  }
}
