import { consumeSql } from './consume.sql.js';
import { ceilDivSql, decisionSql } from './decision.sql.js';
import { operationsSql } from './operations.sql.js';
import { stateRowsSql } from './state-rows.sql.js';
import { overridesTableSql } from './postgres-overrides.js';
import { policyRecordsTableSql } from './postgres-policy-records.js';
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
 * The schema of the PostgreSQL store, for teams that run their own migrations: an UNLOGGED table of
 * rate-limit state (rows carry their expiry in ms since the epoch, and a block's end), the durable table of
 * quota usage, and the functions that decide. Run it again after an upgrade: it creates what the new version
 * adds, beside what instances of the version before still call (CONTRIBUTING.md, "Changing the PostgreSQL
 * schema"). `migrate: true` runs the same SQL at start.
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
    overridesTableSql(S),
    policyRecordsTableSql(S),
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
