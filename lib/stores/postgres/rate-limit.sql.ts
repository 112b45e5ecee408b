import { consumeSql } from './consume.sql.js';
import { ceilDivSql, decisionSql } from './decision.sql.js';
import { operationsSql } from './operations.sql.js';
import { stateRowsSql } from './state-rows.sql.js';
import { concurrencySql } from '../../algorithms/concurrency/concurrency.sql.js';
import { fixedWindowSql } from '../../algorithms/fixed-window/fixed-window.sql.js';
import { gcraSql } from '../../algorithms/gcra/gcra.sql.js';
import { periodCounterSql } from '../../algorithms/period-counter.js';
import { quotaSql } from '../../algorithms/quota/quota.sql.js';
import { slidingWindowCounterSql } from '../../algorithms/sliding-window-counter/sliding-window-counter.sql.js';
import { slidingWindowLogSql } from '../../algorithms/sliding-window-log/sliding-window-log.sql.js';
import { tokenBucketSql } from '../../algorithms/token-bucket/token-bucket.sql.js';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Checks a schema name and returns it double-quoted for SQL. */
export function quoteSchema(schema: string): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new TypeError(
      `nest-rate-limit: postgres.schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`,
    );
  }
  return `"${schema}"`;
}

/**
 * Functions of earlier schemas that nothing calls any more. A function whose meaning or signature changes gets
 * a new name, and the old one goes here: an instance of an earlier version that migrates again during a
 * rolling deploy recreates its own functions under their names, without a conflict (CREATE OR REPLACE cannot
 * change a function's result type) and without replacing one that this version calls; the next migration of
 * this version drops them again. The entry points of earlier schemas, rate_limit(...) and
 * rate_limit_consume(...), keep their signatures as wrappers of this version's, so that the instances of
 * earlier versions still running decide with this version's twins.
 */
const OBSOLETE_FUNCTIONS = [
  // 0.1.0
  'rl_step(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_refund(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_period_step(text, bigint, bigint, bigint, bigint)',
  'rl_period_refund(text, bigint, bigint)',
  'rl_gcra_at(bigint, bigint, bigint)',
  'rl_swc_newest(text, bigint)',
  'rl_swc_normalize(text, bigint)',
  'rl_swl_alive(text, bigint, bigint)',
  'rl_swl_encode(bigint[], bigint[])',
  'rl_tb_refill(text, bigint, bigint, bigint)',
  ...['fw', 'gcra', 'quota', 'swc', 'swl', 'tb'].flatMap((a) => [
    `rl_${a}_step(text, bigint, bigint, bigint, bigint, bigint)`,
    `rl_${a}_refund(text, bigint, bigint, bigint, bigint, bigint)`,
  ]),
  // 0.1.0 and the first set-based schema: the token bucket's and GCRA's states of tokens and of a TAT, the
  // dispatchers and writers without concurrency and blocks
  'rl_save(int, text, text, bigint, bigint, bigint, bigint, bigint, bigint)',
  'rl_gcra_ahead(text, bigint, bigint)',
  'rl_tb_tokens(text, bigint, bigint, bigint)',
  'rl_tb_decision(text, bigint, bigint, bigint, bigint, bigint)',
  'rl_tb_refunded(text, bigint, bigint, bigint, bigint, bigint)',
  'rl_gcra_decision(text, bigint, bigint, bigint, bigint, bigint)',
  'rl_gcra_refunded(text, bigint, bigint, bigint, bigint)',
  'rl_decision(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_refunded(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_consume_one(bigint, int, bigint, text, bigint, bigint, bigint, bigint)',
  // the schema of blocks and shadow items (entry points _v2): token bucket and GCRA states without the limit
  // their units drain at, and the functions that call their twins
  'rl_bucket_taken(text, int, bigint, bigint, bigint, bigint)',
  'rl_bucket_decision(text, int, bigint, bigint, bigint, bigint, bigint)',
  'rl_bucket_refunded(text, int, bigint, bigint, bigint, bigint, bigint)',
  'rl_algo_decision(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_algo_refunded(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_standing(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_consume_item(bigint, int, bigint, text, bigint, bigint, bigint, bigint, boolean, bigint)',
  // the schema of token bucket states with their limit (entry points _v3): GCRA decided as a token bucket, by
  // the functions that call the twins
  'rl_algo_decision_v3(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_algo_refunded_v3(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_standing_v3(int, text, bigint, bigint, bigint, bigint, bigint)',
  'rl_consume_item_v3(bigint, int, bigint, text, bigint, bigint, bigint, bigint, boolean, bigint)',
  // before every consume went through it
  'rate_limit_consume_v4(bigint, boolean, int, bigint[], int[], int[], text[], int[], bigint[], bigint[], bigint[], bigint[], boolean[], bigint[])',
];

/**
 * Columns added to the tables of earlier schemas, nullable and without a default (PostgreSQL adds those
 * without rewriting the table, and the INSERTs of earlier versions, which name their columns, leave them
 * NULL). Each is added only when it is missing: ALTER TABLE takes an ACCESS EXCLUSIVE lock on the table even
 * when IF NOT EXISTS finds nothing to do, and every start migrates.
 */
const ADDED_COLUMNS: readonly [table: string, column: string, type: string][] = [
  // the end of a key's block (ms since the epoch; NULL: none)
  ['rate_limit_state', 'blocked_until', 'bigint'],
  ['rate_limit_quota_usage', 'blocked_until', 'bigint'],
];

const addColumnsSql = (S: string): string => `DO $do$
BEGIN
${ADDED_COLUMNS.map(
  ([table, column, type]) => `  IF NOT EXISTS (SELECT FROM pg_attribute
      WHERE attrelid = '${S}.${table}'::regclass AND attname = '${column}' AND NOT attisdropped) THEN
    ALTER TABLE ${S}.${table} ADD COLUMN ${column} ${type};
  END IF;`,
).join('\n')}
END $do$;`;

/**
 * The schema of the PostgreSQL store, for teams that run their own migrations: an UNLOGGED table of
 * rate-limit state (rows carry their expiry in ms since the epoch, and a block's end), the durable table of
 * quota usage, and the functions that decide. Run it again after an upgrade: it adds the columns an earlier
 * version's tables lack, replaces the functions and drops those an earlier version left.
 * `migrate: true` runs the same SQL at start.
 * @example await pool.query(postgresSchemaSql('public'))
 */
export function postgresSchemaSql(schema = 'public'): string {
  const S = quoteSchema(schema);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${S};`,
    `CREATE UNLOGGED TABLE IF NOT EXISTS ${S}.rate_limit_state (
  key text PRIMARY KEY,
  state text NOT NULL,
  expires_at bigint NOT NULL,
  blocked_until bigint
);`,
    `CREATE INDEX IF NOT EXISTS rate_limit_state_expires_at ON ${S}.rate_limit_state (expires_at);`,
    // Quotas are billing data: a logged (durable) table, one row per key and calendar period, never pruned.
    `CREATE TABLE IF NOT EXISTS ${S}.rate_limit_quota_usage (
  key text NOT NULL,
  period_start bigint NOT NULL,
  period_end bigint NOT NULL,
  used bigint NOT NULL,
  quota_limit bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  period_start_at timestamptz GENERATED ALWAYS AS (to_timestamp(period_start / 1000.0)) STORED,
  blocked_until bigint,
  PRIMARY KEY (key, period_start)
);`,
    addColumnsSql(S),
    ...OBSOLETE_FUNCTIONS.map((signature) => `DROP FUNCTION IF EXISTS ${S}.${signature};`),
    // An SQL function is checked when it is created: the ones it calls come first.
    ceilDivSql(S),
    periodCounterSql(S),
    fixedWindowSql(S),
    slidingWindowLogSql(S),
    slidingWindowCounterSql(S),
    tokenBucketSql(S),
    gcraSql(S),
    concurrencySql(S),
    quotaSql(S),
    decisionSql(S),
    stateRowsSql(S),
    operationsSql(S),
    consumeSql(S),
  ].join('\n');
}
