import type { Clock } from '../../util/clock.js';
import type { PgPool } from '../client-types.js';
import type { IdentityOptions } from '../storage-key.js';

/** Options of the PostgreSQL store. */
export interface PostgresRateLimitStoreOptions extends IdentityOptions {
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

/** The store's numeric options, checked, with their defaults. */
export interface PostgresStoreSettings {
  readonly ttlSlackMs: number;
  readonly pruneIntervalMs: number;
  readonly pruneBatch: number;
  readonly queueTimeoutMs: number;
  readonly maxQueued: number;
}

/** `value` when it is a safe integer from `min` to `max`; else an error that names the option and what it got. */
function integer(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    const got = typeof value === 'number' ? String(value) : JSON.stringify(value);
    throw new TypeError(`nest-rate-limit: ${name} must be an integer ${range}, got ${got}`);
  }
  return value;
}

/** The numeric options of `options`, checked in the order the store has always checked them. */
export function storeSettings(options: PostgresRateLimitStoreOptions): PostgresStoreSettings {
  const ttlSlackMs = integer('ttlSlackMs', options.ttlSlackMs ?? 1000, 0);
  // 0 would make prune() delete nothing per statement, and loop for ever.
  const pruneBatch = integer('pruneBatch', options.pruneBatch ?? 1000, 1);
  const queueTimeoutMs = integer('queueTimeoutMs', options.queueTimeoutMs ?? 1000, 1);
  const maxQueued = integer('maxQueued', options.maxQueued ?? 10_000, 1);
  // 0 turns pruning off; setInterval takes at most 2^31 - 1 ms (beyond, it would fire every millisecond).
  const pruneIntervalMs = integer('pruneIntervalMs', options.pruneIntervalMs ?? 60_000, 0, 2 ** 31 - 1);
  return { ttlSlackMs, pruneIntervalMs, pruneBatch, queueTimeoutMs, maxQueued };
}
