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
      `nestjs-rate-limit: postgres.schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`,
    );
  }
  return `"${schema}"`;
}

const dispatcher = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_ceil_div(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN (a / b) * b < a THEN a / b + 1 ELSE a / b END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_step(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  r record;
BEGIN
  CASE algo
    WHEN 1 THEN r := ${S}.rl_fw_step(st, lim, w, cap, now_ms, cost);
    WHEN 2 THEN r := ${S}.rl_swl_step(st, lim, w, cap, now_ms, cost);
    WHEN 3 THEN r := ${S}.rl_swc_step(st, lim, w, cap, now_ms, cost);
    WHEN 4 THEN r := ${S}.rl_tb_step(st, lim, w, cap, now_ms, cost);
    WHEN 6 THEN r := ${S}.rl_quota_step(st, lim, w, cap, now_ms, cost);
    ELSE r := ${S}.rl_gcra_step(st, lim, w, cap, now_ms, cost);
  END CASE;
  new_st := r.new_st; allowed := r.allowed; remaining := r.remaining; reset_ms := r.reset_ms; retry_ms := r.retry_ms;
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_refund(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
  RETURN CASE algo
    WHEN 1 THEN ${S}.rl_fw_refund(st, lim, w, cap, now_ms, amount)
    WHEN 2 THEN ${S}.rl_swl_refund(st, lim, w, cap, now_ms, amount)
    WHEN 3 THEN ${S}.rl_swc_refund(st, lim, w, cap, now_ms, amount)
    WHEN 4 THEN ${S}.rl_tb_refund(st, lim, w, cap, now_ms, amount)
    WHEN 6 THEN ${S}.rl_quota_refund(st, lim, w, cap, now_ms, amount)
    ELSE ${S}.rl_gcra_refund(st, lim, w, cap, now_ms, amount)
  END;
END $fn$;

-- Writes the state of item (key, algo): quotas to the durable table, per period (w is its start).
CREATE OR REPLACE FUNCTION ${S}.rl_save(algo int, k text, st text, reset_ms bigint, slack bigint, now_ms bigint,
  lim bigint, w bigint, cap bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF algo = 6 THEN
    IF st IS NOT NULL THEN
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      VALUES (k, w, cap, split_part(st, ':', 2)::bigint, lim)
      ON CONFLICT (key, period_start) DO UPDATE
        SET used = excluded.used, quota_limit = excluded.quota_limit, period_end = excluded.period_end, updated_at = now();
    ELSE
      DELETE FROM ${S}.rate_limit_quota_usage WHERE key = k AND period_start = w;
    END IF;
  ELSIF st IS NOT NULL AND reset_ms > 0 THEN
    INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at) VALUES (k, st, now_ms + reset_ms + slack)
    ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
  ELSE
    DELETE FROM ${S}.rate_limit_state WHERE key = k;
  END IF;
END $fn$;

-- The Postgres twin of the Redis script's dispatcher: one call decides every item of a request.
--   op       'consume' | 'peek' | 'refund' | 'reset'
--   now_in   current time in ms since the epoch, or NULL to take the database's clock
--   slack    ms added to every row's expiry
--   keys, algos, lims, ws, caps, costs: per item, as in the Redis script
-- Returns 4 bigints per item: allowed (0/1), remaining, reset_ms, retry_ms (-1: the cost can never fit).
-- Per-key transaction-level advisory locks, taken in key order, make each call atomic under concurrency.
CREATE OR REPLACE FUNCTION ${S}.rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
  now_ms bigint := coalesce(now_in, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  n int := coalesce(array_length(keys, 1), 0);
  k text;
  original text[];
  working text[];
  known boolean[];
  st text;
  r record;
  p record;
  res bigint[] := '{}';
  results bigint[];
  new_states text[];
  all_allowed boolean := true;
  last_i int;
  qs bigint;
  qu bigint;
  qe bigint;
BEGIN
  IF op = 'reset' THEN
    DELETE FROM ${S}.rate_limit_state WHERE key = ANY(keys);
    DELETE FROM ${S}.rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
      WHERE u.a = 6 AND q.key = u.k AND q.period_start >= u.w;
    RETURN res;
  END IF;
  IF n = 1 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(keys[1], 0));
  ELSE
    FOR k IN SELECT DISTINCT u FROM unnest(keys) AS u ORDER BY u LOOP
      PERFORM pg_advisory_xact_lock(hashtextextended(k, 0));
    END LOOP;
  END IF;
  original := array_fill(NULL::text, ARRAY[n]);
  known := array_fill(false, ARRAY[n]);
  FOR i IN 1..n LOOP
    -- the first item of each key reads it; later items of the same key share that state
    FOR j IN 1..i LOOP
      IF keys[j] = keys[i] THEN
        IF j = i THEN
          st := NULL;
          IF algos[i] = 6 THEN
            -- the newest period of the key: a clock ahead may have begun the next one, which then counts
            SELECT q.period_start, q.used, q.period_end INTO qs, qu, qe FROM ${S}.rate_limit_quota_usage q
              WHERE q.key = keys[i] AND q.period_start >= ws[i] ORDER BY q.period_start DESC LIMIT 1;
            IF FOUND THEN
              st := qs || ':' || qu;
              IF qs > ws[i] THEN ws[i] := qs; caps[i] := qe; END IF;
            END IF;
          ELSE
            SELECT s.state INTO st FROM ${S}.rate_limit_state s WHERE s.key = keys[i] AND s.expires_at > now_ms;
          END IF;
          original[i] := st;
        ELSE
          original[i] := original[j];
          IF algos[i] = 6 THEN ws[i] := ws[j]; caps[i] := caps[j]; END IF;
        END IF;
        EXIT;
      END IF;
    END LOOP;
  END LOOP;

  IF op = 'peek' THEN
    FOR i IN 1..n LOOP
      r := ${S}.rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        p := ${S}.rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 1);
        res := res || ARRAY[0, r.remaining, r.reset_ms, p.retry_ms]::bigint[];
      END IF;
    END LOOP;
    RETURN res;
  END IF;

  IF op = 'refund' THEN
    working := original;
    FOR i IN 1..n LOOP
      st := working[i];
      FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN st := working[j]; END IF; END LOOP;
      st := ${S}.rl_refund(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
      working[i] := st;
      r := ${S}.rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        p := ${S}.rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, 1);
        res := res || ARRAY[0, r.remaining, r.reset_ms, p.retry_ms]::bigint[];
      END IF;
      PERFORM ${S}.rl_save(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i]);
    END LOOP;
    RETURN res;
  END IF;

  -- consume: decide every item, write only when all are allowed
  working := original;
  results := '{}';
  new_states := array_fill(NULL::text, ARRAY[n]);
  FOR i IN 1..n LOOP
    st := original[i];
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] AND known[j] THEN st := working[j]; END IF; END LOOP;
    r := ${S}.rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
    results := results || ARRAY[r.allowed, r.remaining, r.reset_ms, r.retry_ms]::bigint[];
    new_states[i] := r.new_st;
    IF r.allowed = 0 THEN all_allowed := false;
    ELSIF costs[i] > 0 THEN
      working[i] := r.new_st; known[i] := true;
      FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN known[j] := false; END IF; END LOOP;
    END IF;
  END LOOP;
  IF all_allowed THEN
    FOR i IN 1..n LOOP
      IF known[i] THEN
        IF algos[i] = 6 THEN
          PERFORM ${S}.rl_save(algos[i], keys[i], new_states[i], results[(i - 1) * 4 + 3], slack, now_ms, lims[i], ws[i], caps[i]);
        ELSIF new_states[i] IS NOT NULL AND results[(i - 1) * 4 + 3] > 0 THEN
          INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at)
          VALUES (keys[i], new_states[i], now_ms + results[(i - 1) * 4 + 3] + slack)
          ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
        ELSE
          DELETE FROM ${S}.rate_limit_state WHERE key = keys[i];
        END IF;
      END IF;
    END LOOP;
    RETURN results;
  END IF;
  FOR i IN 1..n LOOP
    IF results[(i - 1) * 4 + 1] = 1 THEN
      r := ${S}.rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
    ELSE
      res := res || results[(i - 1) * 4 + 1:(i - 1) * 4 + 4];
    END IF;
  END LOOP;
  RETURN res;
END $fn$;
`;

/**
 * The schema of the PostgreSQL store, for teams that run their own migrations: an UNLOGGED table of
 * rate-limit state (rows carry their expiry in ms since the epoch) and the functions that decide.
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
  expires_at bigint NOT NULL
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
  PRIMARY KEY (key, period_start)
);`,
    // PL/pgSQL bodies are resolved when they run, so the order of the functions does not matter.
    dispatcher(S),
    periodCounterSql(S),
    fixedWindowSql(S),
    slidingWindowLogSql(S),
    slidingWindowCounterSql(S),
    tokenBucketSql(S),
    gcraSql(S),
    quotaSql(S),
  ].join('\n');
}
