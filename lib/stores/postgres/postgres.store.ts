import type { Pool } from 'pg';

import { type Clock, systemClock } from '../../clock.js';
import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import { decisionsFromReply } from '../decisions.js';
import type { PgPool } from '../client-types.js';
import type {
  RateLimitStore,
  RateLimitStoreCall,
  RateLimitStoreChanges,
  RateLimitStoreItem,
  StoreCallItem,
} from '../rate-limit-store.js';
import { checkKeyPrefix, storageKey } from '../storage-key.js';
import { feedChannel, PostgresChangeFeed } from './change-feed.js';
import { ConsumeBatcher } from './consume-batcher.js';
import { columnArrays, itemColumns } from './item-columns.js';
import { postgresSchemaSql, quoteSchema } from './rate-limit.sql.js';

/** Options of the PostgreSQL store. */
export interface PostgresRateLimitStoreOptions {
  /** A `pg` Pool. The store never closes it. */
  pool: PgPool;
  /** Schema of the table and functions; default 'public'. */
  schema?: string;
  /** Time source, or 'store' to take the database's clock (one clock for every instance). */
  clock?: Clock | 'store';
  /** Default 'rl:'. */
  keyPrefix?: string;
  /** Milliseconds added to every row's expiry; default 1000. */
  ttlSlackMs?: number;
  /** How often expired rows are deleted, in small batches; default 60,000 ms; 0 turns pruning off. */
  pruneIntervalMs?: number;
  /** Rows deleted per statement when pruning; default 1000. */
  pruneBatch?: number;
  /**
   * A consume waits in the store while its statements are busy (or one holds its key); the module's timeout
   * counts from when it is sent. It is refused, and never sent, once it has waited `queueTimeoutMs`, or when the
   * statements it waits for have been out for longer than the module's timeout (this, without a module).
   * Default 1000; RateLimitModule's own store: 10 × its `timeout`.
   */
  queueTimeoutMs?: number;
  /**
   * Most consumes that wait for a statement at once; one more is refused at once (the database has fallen
   * behind what this instance asks of it). Default 10,000.
   */
  maxQueued?: number;
}

type Operation = 'consume' | 'peek' | 'refund' | 'reset' | 'block' | 'unblock';

/** A pool smaller than this has no connection to spare for the feed's LISTEN: the store then has no feed. */
const FEED_MIN_POOL = 3;

/**
 * Consume statements the store keeps busy at once; the requests that come meanwhile go out together in the
 * next. Two keep the database busy while one is on the wire; more statements hold fewer requests each, and a
 * statement costs more than a few of its requests (on the project's machine, 1 policy at 50 in flight: about
 * 45,000 decisions/s with 1 to 3 in flight, 43,000 with 4, 27,000 with 8).
 */
const CONSUMES_IN_FLIGHT = 2;

/**
 * State in PostgreSQL, for teams without Redis: an UNLOGGED table (rate-limit state is ephemeral) and SQL
 * twins of the algorithms. Each decision is ONE statement whatever the number of policies; it takes per-key
 * transaction locks, so it is atomic under concurrency, and a consume writes only when every enforced policy
 * allows (and the block that a denial starts, in the same statement). Consumes that arrive while the store's
 * statements are busy go out together, one statement deciding many requests
 * (`SELECT rate_limit_consume_v4(...)`); peek, refund, reset, block and unblock go through
 * `SELECT rate_limit_v4(...)`. Rows carry their expiry, are never read once expired, and are deleted in the
 * background in small batches.
 * @example const store = new PostgresRateLimitStore({ pool: new Pool({ connectionString }) }); await store.migrate();
 */
export class PostgresRateLimitStore implements RateLimitStore {
  private readonly pool: Pool;
  /**
   * Changes outside decisions, announced with NOTIFY to every instance; the listener keeps one connection of
   * the pool while the module listens (none with a pool of fewer than 3 connections: no feed then).
   */
  readonly changes: RateLimitStoreChanges | undefined;
  private readonly schema: string;
  private readonly clock: Clock | undefined;
  private readonly keyPrefix: string;
  private readonly ttlSlack: number;
  private readonly pruneBatch: number;
  private readonly decideSql: string;
  private readonly statementName: string;
  private readonly batcher: ConsumeBatcher;
  private pruner: NodeJS.Timeout | undefined;

  constructor(private readonly options: PostgresRateLimitStoreOptions) {
    if (options?.pool === undefined)
      throw new TypeError('nest-rate-limit: PostgresRateLimitStore needs `pool`, a pg Pool');
    // pg's own types inside (a devDependency); the options name only the structural PgPool.
    this.pool = options.pool as unknown as Pool;
    this.schema = options.schema ?? 'public';
    const S = quoteSchema(this.schema);
    this.clock = options.clock === 'store' ? undefined : (options.clock ?? systemClock);
    this.keyPrefix = checkKeyPrefix(options.keyPrefix ?? 'rl:');
    const poolSize = (this.pool as { options?: { max?: number } }).options?.max ?? 10;
    this.changes =
      poolSize >= FEED_MIN_POOL
        ? new PostgresChangeFeed(this.pool, feedChannel(this.schema, this.keyPrefix))
        : undefined;
    const integer = (name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
        const got = typeof value === 'number' ? String(value) : JSON.stringify(value);
        throw new TypeError(`nest-rate-limit: ${name} must be an integer ${range}, got ${got}`);
      }
      return value;
    };
    this.ttlSlack = integer('ttlSlackMs', options.ttlSlackMs ?? 1000, 0);
    // 0 would make prune() delete nothing per statement, and loop for ever.
    this.pruneBatch = integer('pruneBatch', options.pruneBatch ?? 1000, 1);
    this.decideSql = `SELECT ${S}.rate_limit_v4($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) AS r`;
    this.statementName = `nest-rate-limit:v2:${this.schema}`;
    // A named statement is parsed and planned once per connection, not at every decision.
    const consume = {
      name: `nest-rate-limit:consume:v2:${this.schema}`,
      text: `SELECT ${S}.rate_limit_consume_v4($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) AS r`,
    };
    this.batcher = new ConsumeBatcher(
      async (values) => {
        const [row] = (await this.pool.query<{ r: string | null }>({ ...consume, values })).rows;
        if (row === undefined) throw new Error('nest-rate-limit: rate_limit_consume_v4 returned no row');
        return row.r;
      },
      this.ttlSlack,
      CONSUMES_IN_FLIGHT,
      integer('queueTimeoutMs', options.queueTimeoutMs ?? 1000, 1),
      integer('maxQueued', options.maxQueued ?? 10_000, 1),
    );
    // 0 turns pruning off; setInterval takes at most 2^31 - 1 ms (beyond, it would fire every millisecond).
    const interval = integer('pruneIntervalMs', options.pruneIntervalMs ?? 60_000, 0, 2 ** 31 - 1);
    if (interval > 0) {
      this.pruner = setInterval(() => void this.prune().catch(() => undefined), interval);
      this.pruner.unref();
    }
  }

  /**
   * Creates the schema, tables and functions (CREATE ... IF NOT EXISTS / OR REPLACE), adds the columns that
   * the tables of an earlier version lack, and drops the functions it left: safe to run at every start, from
   * many processes at once, and beside instances of earlier versions (see OBSOLETE_FUNCTIONS in
   * rate-limit.sql.ts). It runs in one transaction, on one connection of the pool, under a transaction-level
   * advisory lock of the schema's name, so concurrent migrations of a schema wait for each other instead of
   * racing (CREATE SCHEMA IF NOT EXISTS, CREATE OR REPLACE FUNCTION and ALTER TABLE are not safe against
   * themselves); on error it rolls back and rethrows.
   */
  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      // A statement of its own: the schema SQL then runs on a snapshot taken after the lock was granted. The
      // lock keeps the package's first name, so that instances of earlier versions wait for it too.
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('nestjs-rate-limit:migrate:' || $1, 0))", [
        this.schema,
      ]);
      await client.query(postgresSchemaSql(this.schema));
      await client.query('COMMIT');
    } catch (error) {
      // A connection that cannot even roll back is released with its error: the pool discards it.
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async consume(items: readonly RateLimitStoreItem[], call?: RateLimitStoreCall): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    const now = this.now();
    const columns = itemColumns(items, this.keyPrefix, now);
    // Two items on one key decide one after the other: the general function does that.
    if (items.length > 1 && new Set(columns.keys).size < items.length) return this.decide('consume', items);
    return decisionsFromReply('consume', items, await this.batcher.consume(columns, now, call), 'PostgreSQL');
  }

  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return this.decide('peek', items);
  }

  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.decide('refund', items);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    if (items.length > 0) await this.run('reset', items);
  }

  async block(items: readonly Omit<RateLimitStoreItem, 'cost'>[], durationMs: number): Promise<void> {
    // the block's length travels as the items' cost, as in the Redis script
    if (items.length > 0)
      await this.run(
        'block',
        items.map((item) => ({ ...item, cost: durationMs })),
      );
  }

  async unblock(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    if (items.length > 0) await this.run('unblock', items);
  }

  async quotaUsage(
    policy: ResolvedPolicy,
    key: string,
    periodStartMs: number,
  ): Promise<{ used: number; limit?: number }> {
    const S = quoteSchema(this.schema);
    const { rows } = await this.pool.query<{ used: string; quota_limit: string }>(
      `SELECT used, quota_limit FROM ${S}.rate_limit_quota_usage WHERE key = $1 AND period_start = $2`,
      [storageKey(this.keyPrefix, policy.id, key), periodStartMs],
    );
    const [row] = rows;
    return row === undefined ? { used: 0 } : { used: Number(row.used), limit: Number(row.quota_limit) };
  }

  async ping(): Promise<unknown> {
    return this.pool.query('SELECT 1');
  }

  /** Deletes every row under the store's prefix, quota usage included; resolves with how many went. */
  async resetAll(): Promise<number> {
    const S = quoteSchema(this.schema);
    const like = `${this.keyPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    let removed = 0;
    for (const table of ['rate_limit_state', 'rate_limit_quota_usage']) {
      const result = await this.pool.query(`DELETE FROM ${S}.${table} WHERE key LIKE $1`, [like]);
      removed += result.rowCount ?? 0;
    }
    return removed;
  }

  /** Deletes expired rows, a batch at a time, until none is left; returns how many went. */
  async prune(): Promise<number> {
    const S = quoteSchema(this.schema);
    const now = this.now();
    let removed = 0;
    for (;;) {
      const result = await this.pool.query(
        `DELETE FROM ${S}.rate_limit_state WHERE key IN (SELECT key FROM ${S}.rate_limit_state
           WHERE expires_at <= coalesce($1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) LIMIT $2)`,
        [now, this.pruneBatch],
      );
      removed += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < this.pruneBatch) return removed;
    }
  }

  /** Stops the background pruning. The pool is the caller's and stays open. */
  async close(): Promise<void> {
    clearInterval(this.pruner);
    this.pruner = undefined;
  }

  private async decide(
    op: 'consume' | 'peek' | 'refund',
    items: readonly StoreCallItem[],
  ): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    return decisionsFromReply(op, items, await this.run(op, items), 'PostgreSQL');
  }

  private async run(op: Operation, items: readonly StoreCallItem[]): Promise<unknown> {
    const now = this.now();
    const columns = itemColumns(items, this.keyPrefix, now);
    const consume = op === 'consume';
    const result = await this.pool.query<{ r: string[] }>({
      name: this.statementName,
      text: this.decideSql,
      values: [
        op,
        now,
        this.ttlSlack,
        ...columnArrays(columns),
        consume ? columns.shadows : null,
        consume ? columns.blocks : null,
      ],
    });
    return result.rows[0]?.r;
  }

  /** The time of a decision: the store's clock, or null for the database's. */
  private now(): number | null {
    return this.clock === undefined ? null : this.clock.now();
  }
}
