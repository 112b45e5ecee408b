import type { Pool } from 'pg';

import { type Clock, systemClock } from '../../util/clock.js';
import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import { DecidingStore } from '../deciding-store.js';
import { decisionsFromReply } from '../decisions.js';
import type { RateLimitStoreItem } from '../rate-limit-store.js';
import type {
  EngineStore,
  EngineStoreItem,
  RateLimitStoreCall,
  RateLimitStoreChanges,
  StoreCallItem,
} from '../engine-store.js';
import { checkKeyPrefix, StoredIdentities } from '../storage-key.js';
import { feedChannel, PostgresChangeFeed } from './notify-changes.js';
import { ConsumeBatcher } from './consume-batcher.js';
import { itemColumns } from './item-columns.js';
import { PostgresMaintenance } from './maintenance.js';
import { quoteSchema } from './rate-limit.sql.js';
import { PostgresOverrides } from './postgres-overrides.js';
import { PostgresPolicyRecords } from './postgres-policy-records.js';
import { migrateSchema } from './schema-migration.js';
import { type Operation, PostgresStatements } from './statements.js';
import { type PostgresRateLimitStoreOptions, storeSettings } from './store-options.js';

export type { PostgresRateLimitStoreOptions } from './store-options.js';

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
 * (`SELECT rate_limit_consume(...)`, every consume); peek, refund, charge, reset, block and unblock go through
 * `SELECT rate_limit(...)`. Rows carry their expiry, are never read once expired, and are deleted in the
 * background in small batches.
 * @example const store = new PostgresRateLimitStore({ pool: new Pool({ connectionString }) }); await store.migrate();
 */
export class PostgresRateLimitStore extends DecidingStore implements EngineStore {
  private readonly pool: Pool;
  /**
   * Changes outside decisions, announced with NOTIFY to every instance; the listener keeps one connection of
   * the pool while the module listens (none with a pool of fewer than 3 connections: no feed then).
   * @internal
   */
  readonly changes: RateLimitStoreChanges | undefined;
  private readonly schema: string;
  private readonly clock: Clock | undefined;
  private readonly keyPrefix: string;
  /** The identities as keys hold them (a keyed hash unless `readableKeys`). */
  private readonly identities: StoredIdentities;
  /**
   * The overrides of RateLimitService.override, in the table rate_limit_override.
   * @internal
   */
  readonly overrides: PostgresOverrides;
  /**
   * The policies the instances recorded at start, in the table rate_limit_policy.
   * @internal
   */
  readonly policies: PostgresPolicyRecords;
  private readonly statements: PostgresStatements;
  private readonly maintenance: PostgresMaintenance;
  private readonly batcher: ConsumeBatcher;
  private pruner: NodeJS.Timeout | undefined;

  constructor(private readonly options: PostgresRateLimitStoreOptions) {
    super();
    if (options?.pool === undefined)
      throw new TypeError('nest-rate-limit: PostgresRateLimitStore needs `pool`, a pg Pool');
    // pg's own types inside (a devDependency); the options name only the structural PgPool.
    this.pool = options.pool as unknown as Pool;
    this.schema = options.schema ?? 'public';
    const S = quoteSchema(this.schema);
    this.clock = options.clock === 'store' ? undefined : (options.clock ?? systemClock);
    this.keyPrefix = checkKeyPrefix(options.keyPrefix ?? 'rl:');
    this.identities = new StoredIdentities(this.keyPrefix, options);
    this.overrides = new PostgresOverrides(options.pool, S, this.keyPrefix, this.identities);
    this.policies = new PostgresPolicyRecords(options.pool, S, this.keyPrefix, this.identities);
    const poolSize = (this.pool as { options?: { max?: number } }).options?.max ?? 10;
    this.changes =
      poolSize >= FEED_MIN_POOL
        ? new PostgresChangeFeed(this.pool, feedChannel(this.schema, this.keyPrefix), this.identities)
        : undefined;
    const settings = storeSettings(options);
    this.statements = new PostgresStatements(this.pool, S, this.schema, settings.ttlSlackMs);
    this.maintenance = new PostgresMaintenance(this.pool, S, this.keyPrefix, settings.pruneBatch);
    this.batcher = new ConsumeBatcher(
      (values) => this.statements.consume(values),
      settings.ttlSlackMs,
      CONSUMES_IN_FLIGHT,
      settings.queueTimeoutMs,
      settings.maxQueued,
    );
    if (settings.pruneIntervalMs > 0) {
      this.pruner = setInterval(() => void this.prune().catch(() => undefined), settings.pruneIntervalMs);
      this.pruner.unref();
    }
  }

  /**
   * Creates the schema, tables and functions: safe to run at every start, from many processes at once, and
   * beside instances of other versions (migrateSchema in schema-migration.ts says how).
   */
  migrate(): Promise<void> {
    return migrateSchema(this.pool, this.schema);
  }

  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
  /** @internal The module's timeout counts from when the consume is sent (RateLimitStoreCall). */
  consume(items: readonly EngineStoreItem[], call?: RateLimitStoreCall): Promise<RateLimitDecision[]>;
  async consume(items: readonly EngineStoreItem[], call?: RateLimitStoreCall): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    const now = this.now();
    const columns = itemColumns(items, this.identities, now);
    return decisionsFromReply('consume', items, await this.batcher.consume(columns, now, call), 'PostgreSQL');
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

  /**
   * A quota's usage for a period, from the rows the store keeps (RateLimitService.usage reads it).
   * @internal
   */
  quotaUsage(policy: ResolvedPolicy, key: string, periodStartMs: number): Promise<{ used: number; limit?: number }> {
    return this.maintenance.quotaUsage(this.identities.key(policy, key), periodStartMs);
  }

  async ping(): Promise<unknown> {
    return this.pool.query('SELECT 1');
  }

  /** Deletes every row under the store's prefix, quota usage included; resolves with how many went. */
  resetAll(): Promise<number> {
    return this.maintenance.resetAll();
  }

  /** Deletes expired rows, a batch at a time, until none is left; returns how many went. */
  prune(): Promise<number> {
    return this.maintenance.prune(this.now());
  }

  /** Stops the background pruning. The pool is the caller's and stays open. */
  async close(): Promise<void> {
    clearInterval(this.pruner);
    this.pruner = undefined;
  }

  protected async decide(
    op: 'peek' | 'refund' | 'charge',
    items: readonly StoreCallItem[],
  ): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    // a shadow item is not charged; a charge replies as a peek of each key afterwards, whatever the cost
    const sent = op === 'charge' ? items.map((item) => (item.shadow === true ? { ...item, cost: 0 } : item)) : items;
    return decisionsFromReply(op, items, await this.run(op, sent), 'PostgreSQL');
  }

  private run(op: Operation, items: readonly StoreCallItem[]): Promise<unknown> {
    const now = this.now();
    return this.statements.operation(op, itemColumns(items, this.identities, now), now);
  }

  /** The time of a decision: the store's clock, or null for the database's. */
  private now(): number | null {
    return this.clock === undefined ? null : this.clock.now();
  }
}
