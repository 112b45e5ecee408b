-- The schema of nestjs-rate-limit at git 35896cc (the first set-based statements, before blocks and shadow items)
-- as postgresSchemaSql('__SCHEMA__') wrote it: test/postgres/migration.spec.ts migrates it to the current one.
CREATE SCHEMA IF NOT EXISTS "__SCHEMA__";
CREATE UNLOGGED TABLE IF NOT EXISTS "__SCHEMA__".rate_limit_state (
  key text PRIMARY KEY,
  state text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_limit_state_expires_at ON "__SCHEMA__".rate_limit_state (expires_at);
CREATE TABLE IF NOT EXISTS "__SCHEMA__".rate_limit_quota_usage (
  key text NOT NULL,
  period_start bigint NOT NULL,
  period_end bigint NOT NULL,
  used bigint NOT NULL,
  quota_limit bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  period_start_at timestamptz GENERATED ALWAYS AS (to_timestamp(period_start / 1000.0)) STORED,
  PRIMARY KEY (key, period_start)
);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_step(int, text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_refund(int, text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_period_step(text, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_period_refund(text, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_gcra_at(bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swc_newest(text, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swc_normalize(text, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swl_alive(text, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swl_encode(bigint[], bigint[]);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_tb_refill(text, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_fw_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_fw_refund(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_gcra_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_gcra_refund(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_quota_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_quota_refund(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swc_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swc_refund(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swl_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_swl_refund(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_tb_step(text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION IF EXISTS "__SCHEMA__".rl_tb_refund(text, bigint, bigint, bigint, bigint, bigint);

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_ceil_div(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN (a / b) * b < a THEN a / b + 1 ELSE a / b END
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_newest(st text, period bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' THEN greatest(period, split_part(st, ':', 1)::bigint) ELSE period END
$fn$;

-- at most lim units in the period "period", which ends period_end ms from now
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_decision(st text, period bigint, period_end bigint, lim bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT c.ok THEN st WHEN c.n + cost > 0 THEN period::text || ':' || (c.n + cost)::text END,
    c.ok::int,
    CASE WHEN c.ok THEN lim - c.n - cost ELSE greatest(0, lim - c.n) END,
    CASE WHEN c.ok AND c.n + cost = 0 OR NOT c.ok AND c.n = 0 THEN 0 ELSE period_end END,
    CASE WHEN c.ok THEN 0 WHEN cost > lim THEN -1 ELSE period_end END,
    greatest(0, lim - c.n),
    CASE WHEN c.n > 0 THEN period_end ELSE 0 END
  FROM (SELECT d.n, cost <= lim AND d.n + cost <= lim AS ok FROM (
    SELECT CASE WHEN r.v[1] = period THEN r.v[2] ELSE 0 END AS n
    FROM (SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r
    OFFSET 0) d) c
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_refunded(st text, period bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.v[1] = period AND r.v[2] - amount > 0 THEN period::text || ':' || (r.v[2] - amount)::text END
  FROM (SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fw_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT d.* FROM (SELECT "__SCHEMA__".rl_period_newest(st, now_ms / w) AS idx OFFSET 0) p,
    LATERAL "__SCHEMA__".rl_period_decision(st, p.idx, (p.idx + 1) * w - now_ms, lim, cost) d
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fw_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_refunded(st, "__SCHEMA__".rl_period_newest(st, now_ms / w), amount)
$fn$;


-- The key's time: now, or its newest (last) entry's when that is later.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_key_time(st text, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN split_part(st, ',', -1) ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(now_ms, split_part(split_part(st, ',', -1), ':', 1)::bigint) ELSE now_ms END
$fn$;

-- The entries alive at at_ms, oldest first.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_live(st text, w bigint, at_ms bigint, OUT times bigint[], OUT costs bigint[])
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  entry text;
  n int := 0;
BEGIN
  times := '{}'; costs := '{}';
  FOREACH entry IN ARRAY coalesce(string_to_array(st, ','), '{}') LOOP
    IF entry ~ '^-?[0-9]+:[0-9]+$' AND split_part(entry, ':', 1)::bigint + w > at_ms THEN
      n := n + 1; times[n] := split_part(entry, ':', 1)::bigint; costs[n] := split_part(entry, ':', 2)::bigint;
    END IF;
  END LOOP;
END $fn$;

-- The state string of entries (NULL when there are none); with only_used, of those whose cost is above 0.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_join(times bigint[], costs bigint[], only_used boolean) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  st text;
BEGIN
  FOR i IN 1..cardinality(times) LOOP
    IF costs[i] > 0 OR NOT only_used THEN
      st := CASE WHEN st IS NULL THEN '' ELSE st || ',' END || times[i]::text || ':' || costs[i]::text;
    END IF;
  END LOOP;
  RETURN st;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint,
  OUT remaining_now bigint, OUT reset_now bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  at_ms bigint := "__SCHEMA__".rl_swl_key_time(st, now_ms);
  live record := "__SCHEMA__".rl_swl_live(st, w, at_ms);
  times bigint[] := live.times;
  costs bigint[] := live.costs;
  n int := cardinality(live.times);
  used bigint := 0;
  freed bigint := 0;
BEGIN
  FOR i IN 1..n LOOP used := used + costs[i]; END LOOP;
  remaining_now := greatest(0, lim - used);
  reset_now := CASE WHEN n = 0 THEN 0 ELSE times[n] + w - now_ms END;
  IF cost <= lim AND used + cost <= lim THEN
    IF cost > 0 AND n > 0 AND times[n] = at_ms THEN
      costs[n] := costs[n] + cost;
    ELSIF cost > 0 THEN
      n := n + 1; times[n] := at_ms; costs[n] := cost;
    END IF;
    new_st := "__SCHEMA__".rl_swl_join(times, costs, false); allowed := 1; remaining := lim - used - cost; retry_ms := 0;
    reset_ms := CASE WHEN n = 0 THEN 0 ELSE times[n] + w - now_ms END;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := remaining_now; reset_ms := reset_now; retry_ms := -1;
  IF cost <= lim THEN
    -- the oldest entries leave the window first: wait for the one that frees enough units
    FOR i IN 1..n LOOP
      freed := freed + costs[i];
      IF freed >= used + cost - lim THEN retry_ms := times[i] + w - now_ms; EXIT; END IF;
    END LOOP;
  END IF;
END $fn$;

-- the newest units go back first: they are the ones that would otherwise weigh longest
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := "__SCHEMA__".rl_swl_live(st, w, "__SCHEMA__".rl_swl_key_time(st, now_ms));
  costs bigint[] := live.costs;
  left_units bigint := amount;
  take bigint;
BEGIN
  FOR i IN REVERSE cardinality(costs)..1 LOOP
    EXIT WHEN left_units <= 0;
    take := least(costs[i], left_units);
    costs[i] := costs[i] - take;
    left_units := left_units - take;
  END LOOP;
  RETURN "__SCHEMA__".rl_swl_join(live.times, costs, true);
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_window(st text, w bigint, now_ms bigint)
RETURNS TABLE (idx bigint, at_ms bigint, cur bigint, prev bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT n.idx, greatest(now_ms, n.idx * w),
    CASE WHEN n.sw = n.idx THEN n.sc ELSE 0 END,
    CASE WHEN n.sw = n.idx THEN n.sp WHEN n.sw = n.idx - 1 THEN n.sc ELSE 0 END
  FROM (SELECT d.sw, d.sc, d.sp, CASE WHEN d.sw > now_ms / w THEN d.sw ELSE now_ms / w END AS idx
    FROM (SELECT r.v[1] AS sw, r.v[2] AS sc, r.v[3] AS sp
      FROM (SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+:[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r
      OFFSET 0) d OFFSET 0) n
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st
      WHEN v.cur + cost > 0 OR v.prev > 0 THEN v.idx::text || ':' || (v.cur + cost)::text || ':' || v.prev::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (lim * w - v.used - v.need) / w ELSE greatest(0, lim * w - v.used) / w END,
    CASE WHEN CASE WHEN v.ok THEN v.cur + cost ELSE v.cur END > 0 THEN (v.idx + 2) * w - now_ms
      WHEN v.prev > 0 THEN (v.idx + 1) * w - now_ms ELSE 0 END,
    CASE WHEN v.ok THEN 0 WHEN cost > lim THEN -1
      -- fits later in this window, once the previous window's weight has decayed enough (prev > 0 here)
      WHEN v.cur + cost <= lim THEN w - ((lim - v.cur - cost) * w) / v.prev - (v.at_ms - v.idx * w) + (v.at_ms - now_ms)
      -- only in the next window, where this window's count becomes the decaying one (cur > 0 here)
      ELSE (v.idx + 1) * w + greatest(0, w - ((lim - cost) * w) / v.cur) - now_ms END,
    greatest(0, lim * w - v.used) / w,
    CASE WHEN v.cur > 0 THEN (v.idx + 2) * w - now_ms WHEN v.prev > 0 THEN (v.idx + 1) * w - now_ms ELSE 0 END
  FROM (SELECT k.*, u.used, u.need, cost <= lim AND u.used + u.need <= lim * w AS ok
    FROM "__SCHEMA__".rl_swc_window(st, w, now_ms) k,
      LATERAL (SELECT k.cur * w + k.prev * (w - (k.at_ms - k.idx * w)) AS used,
        CASE WHEN cost > lim THEN 0 ELSE cost * w END AS need OFFSET 0) u OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.nc > 0 OR n.np > 0 THEN n.idx::text || ':' || n.nc::text || ':' || n.np::text END
  FROM (SELECT k.idx, k.cur - least(k.cur, amount) AS nc, greatest(0, k.prev - (amount - least(k.cur, amount))) AS np
    FROM "__SCHEMA__".rl_swc_window(st, w, now_ms) k OFFSET 0) n
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_tokens(st text, full_units bigint, lim bigint, now_ms bigint)
RETURNS TABLE (tokens bigint, at_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN d.t IS NULL THEN full_units WHEN now_ms - d.a <= 0 THEN least(full_units, d.t)
      -- least() before the product could overflow: elapsed beyond the time to fill up refills to full
      WHEN now_ms - d.a >= full_units / lim + 1 THEN full_units ELSE least(full_units, d.t + (now_ms - d.a) * lim) END,
    CASE WHEN d.t IS NOT NULL AND now_ms - d.a <= 0 THEN d.a ELSE now_ms END
  FROM (SELECT r.v[1] AS t, r.v[2] AS a
    FROM (SELECT CASE WHEN st ~ '^[0-9]+:-?[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r OFFSET 0) d
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_decision(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st WHEN v.tokens - v.need < v.full_units THEN (v.tokens - v.need)::text || ':' || v.at_ms::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.tokens - v.need) / w ELSE v.tokens / w END,
    "__SCHEMA__".rl_ceil_div(v.full_units - v.tokens + CASE WHEN v.ok THEN v.need ELSE 0 END, lim),
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN -1 ELSE "__SCHEMA__".rl_ceil_div(v.need - v.tokens, lim) END,
    v.tokens / w,
    "__SCHEMA__".rl_ceil_div(v.full_units - v.tokens, lim)
  FROM (SELECT r.tokens, r.at_ms, f.full_units, f.need, cost <= cap AND f.need <= r.tokens AS ok
    FROM (SELECT cap * w AS full_units, CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) f,
      LATERAL "__SCHEMA__".rl_tb_tokens(st, f.full_units, lim, now_ms) r OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_refunded(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.tokens < n.full_units THEN n.tokens::text || ':' || n.at_ms::text END
  FROM (SELECT f.full_units, r.at_ms,
      CASE WHEN amount >= cap THEN f.full_units ELSE least(f.full_units, r.tokens + amount * w) END AS tokens
    FROM (SELECT cap * w AS full_units OFFSET 0) f, LATERAL "__SCHEMA__".rl_tb_tokens(st, f.full_units, lim, now_ms) r OFFSET 0) n
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_ahead(st text, lim bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(0, (split_part(st, ':', 1)::bigint - now_ms) * lim + split_part(st, ':', 2)::bigint) ELSE 0 END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_decision(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st WHEN v.nxt > 0 THEN (now_ms + v.nxt / lim)::text || ':' || (v.nxt % lim)::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.full_units - v.nxt) / w ELSE greatest(0, v.full_units - v.ahead) / w END,
    "__SCHEMA__".rl_ceil_div(CASE WHEN v.ok THEN v.nxt ELSE v.ahead END, lim),
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN -1 ELSE "__SCHEMA__".rl_ceil_div(v.nxt - v.full_units, lim) END,
    greatest(0, v.full_units - v.ahead) / w,
    "__SCHEMA__".rl_ceil_div(v.ahead, lim)
  FROM (SELECT a.ahead, a.full_units, a.ahead + a.need AS nxt, cost <= cap AND a.ahead + a.need <= a.full_units AS ok
    FROM (SELECT "__SCHEMA__".rl_gcra_ahead(st, lim, now_ms) AS ahead, cap * w AS full_units,
      CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) a OFFSET 0) v
$fn$;

-- amount × w is computed only when it is at most what is ahead (a larger amount empties the key)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_refunded(st text, lim bigint, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.ahead > 0 THEN (now_ms + r.ahead / lim)::text || ':' || (r.ahead % lim)::text END
  FROM (SELECT CASE WHEN amount > a.ahead / w THEN 0 ELSE a.ahead - amount * w END AS ahead
    FROM (SELECT "__SCHEMA__".rl_gcra_ahead(st, lim, now_ms) AS ahead OFFSET 0) a OFFSET 0) r
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_decision(st text, lim bigint, start_ms bigint, end_ms bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_decision(st, start_ms, end_ms - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_refunded(st text, start_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_refunded(st, start_ms, amount)
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_decision(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_fw_decision(st, lim, w, now_ms, cost) WHERE algo = 1
  UNION ALL SELECT (d.x).* FROM (SELECT "__SCHEMA__".rl_swl_decision(st, lim, w, now_ms, cost) AS x OFFSET 0) d WHERE algo = 2
  UNION ALL SELECT * FROM "__SCHEMA__".rl_swc_decision(st, lim, w, now_ms, cost) WHERE algo = 3
  UNION ALL SELECT * FROM "__SCHEMA__".rl_tb_decision(st, lim, w, cap, now_ms, cost) WHERE algo = 4
  UNION ALL SELECT * FROM "__SCHEMA__".rl_gcra_decision(st, lim, w, cap, now_ms, cost) WHERE algo = 5
  UNION ALL SELECT * FROM "__SCHEMA__".rl_quota_decision(st, lim, w, cap, now_ms, cost) WHERE algo = 6
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_refunded(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_fw_refunded(st, w, now_ms, amount) WHERE algo = 1
  UNION ALL SELECT "__SCHEMA__".rl_swl_refunded(st, w, now_ms, amount) WHERE algo = 2
  UNION ALL SELECT * FROM "__SCHEMA__".rl_swc_refunded(st, w, now_ms, amount) WHERE algo = 3
  UNION ALL SELECT * FROM "__SCHEMA__".rl_tb_refunded(st, lim, w, cap, now_ms, amount) WHERE algo = 4
  UNION ALL SELECT * FROM "__SCHEMA__".rl_gcra_refunded(st, lim, w, now_ms, amount) WHERE algo = 5
  UNION ALL SELECT * FROM "__SCHEMA__".rl_quota_refunded(st, w, amount) WHERE algo = 6
$fn$;


-- Writes the state of item (key, algo): quotas to the durable table, per period (w is its start).
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_save(algo int, k text, st text, reset_ms bigint, slack bigint, now_ms bigint,
  lim bigint, w bigint, cap bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF algo = 6 THEN
    IF st IS NOT NULL THEN
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      VALUES (k, w, cap, split_part(st, ':', 2)::bigint, lim)
      ON CONFLICT (key, period_start) DO UPDATE
        SET used = excluded.used, quota_limit = excluded.quota_limit, period_end = excluded.period_end, updated_at = now();
    ELSE
      DELETE FROM "__SCHEMA__".rate_limit_quota_usage WHERE key = k AND period_start = w;
    END IF;
  ELSIF st IS NOT NULL AND reset_ms > 0 THEN
    INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at) VALUES (k, st, now_ms + reset_ms + slack)
    ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
  ELSE
    DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = k;
  END IF;
END $fn$;

-- The Postgres twin of the Redis script's dispatcher: one call decides every item of a request.
--   op       'consume' | 'peek' | 'refund' | 'reset'
--   now_in   current time in ms since the epoch, or NULL to take the database's clock
--   slack    ms added to every row's expiry
--   keys, algos, lims, ws, caps, costs: per item, as in the Redis script
-- Returns 4 bigints per item: allowed (0/1), remaining, reset_ms, retry_ms (-1: the cost can never fit).
-- Per-key transaction-level advisory locks, taken in key order, make each call atomic under concurrency.
-- Consumes go through rate_limit_consume, but for a request with two items on one key.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  now_ms bigint := coalesce(now_in, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  n int := coalesce(array_length(keys, 1), 0);
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
    DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = ANY(keys);
    DELETE FROM "__SCHEMA__".rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
      WHERE u.a = 6 AND q.key = u.k AND q.period_start >= u.w;
    RETURN res;
  END IF;
  IF n = 1 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(keys[1], 0));
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(keys) AS u ORDER BY u;
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
            SELECT q.period_start, q.used, q.period_end INTO qs, qu, qe FROM "__SCHEMA__".rate_limit_quota_usage q
              WHERE q.key = keys[i] AND q.period_start >= ws[i] ORDER BY q.period_start DESC LIMIT 1;
            IF FOUND THEN
              st := qs || ':' || qu;
              IF qs > ws[i] THEN ws[i] := qs; caps[i] := qe; END IF;
            END IF;
          ELSE
            SELECT s.state INTO st FROM "__SCHEMA__".rate_limit_state s WHERE s.key = keys[i] AND s.expires_at > now_ms;
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
      SELECT * INTO r FROM "__SCHEMA__".rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        SELECT * INTO p FROM "__SCHEMA__".rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 1);
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
      SELECT x.new_st INTO st FROM "__SCHEMA__".rl_refunded(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
      working[i] := st;
      SELECT * INTO r FROM "__SCHEMA__".rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        SELECT * INTO p FROM "__SCHEMA__".rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 1);
        res := res || ARRAY[0, r.remaining, r.reset_ms, p.retry_ms]::bigint[];
      END IF;
      PERFORM "__SCHEMA__".rl_save(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i]);
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
    SELECT * INTO r FROM "__SCHEMA__".rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
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
          PERFORM "__SCHEMA__".rl_save(algos[i], keys[i], new_states[i], results[(i - 1) * 4 + 3], slack, now_ms, lims[i], ws[i], caps[i]);
        ELSIF new_states[i] IS NOT NULL AND results[(i - 1) * 4 + 3] > 0 THEN
          INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
          VALUES (keys[i], new_states[i], now_ms + results[(i - 1) * 4 + 3] + slack)
          ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
        ELSE
          DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = keys[i];
        END IF;
      END IF;
    END LOOP;
    RETURN results;
  END IF;
  FOR i IN 1..n LOOP
    IF results[(i - 1) * 4 + 1] = 1 THEN
      SELECT * INTO r FROM "__SCHEMA__".rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
    ELSE
      res := res || results[(i - 1) * 4 + 1:(i - 1) * 4 + 4];
    END IF;
  END LOOP;
  RETURN res;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_consume_one(p_slack bigint, p_algo int, p_now bigint, p_key text, p_lim bigint,
  p_w bigint, p_cap bigint, p_cost bigint) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_st text;
  v_w bigint := p_w;
  v_cap bigint := p_cap;
  v_d record;
  qs bigint;
  qu bigint;
  qe bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
  IF p_algo = 6 THEN
    -- a quota counts in the key's newest period: a clock ahead may have begun the next one
    SELECT u.period_start, u.used, u.period_end INTO qs, qu, qe FROM "__SCHEMA__".rate_limit_quota_usage u
      WHERE u.key = p_key AND u.period_start >= p_w ORDER BY u.period_start DESC LIMIT 1;
    IF FOUND THEN
      v_st := qs::text || ':' || qu::text;
      IF qs > p_w THEN v_w := qs; v_cap := qe; END IF;
    END IF;
  ELSE
    SELECT s.state INTO v_st FROM "__SCHEMA__".rate_limit_state s WHERE s.key = p_key AND s.expires_at > p_now;
  END IF;
  CASE p_algo
    WHEN 1 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(1, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 2 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(2, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 3 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(3, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 4 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(4, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 5 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(5, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 6 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(6, v_st, p_lim, v_w, v_cap, p_now, p_cost);
    WHEN 7 THEN SELECT * INTO v_d FROM "__SCHEMA__".rl_decision(7, v_st, p_lim, v_w, v_cap, p_now, p_cost);
  END CASE;
  IF v_d.allowed = 1 AND p_cost > 0 THEN
    IF p_algo = 6 THEN
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      VALUES (p_key, v_w, v_cap, split_part(v_d.new_st, ':', 2)::bigint, p_lim)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now();
    ELSE
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at) VALUES (p_key, v_d.new_st, p_now + v_d.reset_ms + p_slack)
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
    END IF;
  END IF;
  RETURN v_d.allowed::text || ',' || v_d.remaining::text || ',' || v_d.reset_ms::text || ',' || v_d.retry_ms::text;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rate_limit_consume(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[]) RETURNS text LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  db_now bigint;
  reply text;
  part text;
BEGIN
  IF p_nows IS NULL THEN
    db_now := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  END IF;
  IF cardinality(p_keys) = 1 THEN
    RETURN "__SCHEMA__".rl_consume_one(p_slack, p_algo, coalesce(p_nows[1], db_now), p_keys[1], p_lims[1], p_ws[1], p_caps[1],
      p_costs[1]);
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(p_keys) AS u ORDER BY u;
  FOR rnd IN 1..cardinality(p_rounds) LOOP
    IF p_single THEN
      CASE p_algo
      WHEN 1 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(1, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 2 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(2, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 3 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(3, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 4 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(4, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 5 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(5, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 6 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, CASE WHEN true THEN q.period_start::text || ':' || q.used::text END AS st,
          CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
          CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end FROM "__SCHEMA__".rate_limit_quota_usage u
          WHERE true AND u.key = it.k AND u.period_start >= it.w ORDER BY u.period_start DESC LIMIT 1) q ON true) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(6, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      SELECT d.k, d.w, d.cap, split_part(d.new_st, ':', 2)::bigint, d.lim FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now()
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 7 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(7, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      ELSE
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        x.allowed = 1 AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, CASE WHEN it.a = 6 THEN q.period_start::text || ':' || q.used::text ELSE s.state END AS st,
          CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
          CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
        LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end FROM "__SCHEMA__".rate_limit_quota_usage u
          WHERE it.a = 6 AND u.key = it.k AND u.period_start >= it.w ORDER BY u.period_start DESC LIMIT 1) q ON true) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0 AND d.a <> 6
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      SELECT d.k, d.w, d.cap, split_part(d.new_st, ':', 2)::bigint, d.lim FROM decided d
      WHERE d.all_ok AND d.cost > 0 AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now()
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      END CASE;
    ELSE
      CASE p_algo
      WHEN 1 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(1, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 2 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(2, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 3 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(3, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 4 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(4, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 5 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(5, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 6 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, CASE WHEN true THEN q.period_start::text || ':' || q.used::text END AS st,
          CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
          CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end FROM "__SCHEMA__".rate_limit_quota_usage u
          WHERE true AND u.key = it.k AND u.period_start >= it.w ORDER BY u.period_start DESC LIMIT 1) q ON true) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(6, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      SELECT d.k, d.w, d.cap, split_part(d.new_st, ':', 2)::bigint, d.lim FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now()
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 7 THEN
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, s.state AS st,
          it.w AS w,
          it.cap AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(7, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      ELSE
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        bool_and(x.allowed = 1) OVER (PARTITION BY c.req) AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, CASE WHEN it.a = 6 THEN q.period_start::text || ':' || q.used::text ELSE s.state END AS st,
          CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
          CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
        LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end FROM "__SCHEMA__".rate_limit_quota_usage u
          WHERE it.a = 6 AND u.key = it.k AND u.period_start >= it.w ORDER BY u.period_start DESC LIMIT 1) q ON true) c
      CROSS JOIN LATERAL "__SCHEMA__".rl_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0 AND d.a <> 6
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      SELECT d.k, d.w, d.cap, split_part(d.new_st, ':', 2)::bigint, d.lim FROM decided d
      WHERE d.all_ok AND d.cost > 0 AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now()
    )
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      END CASE;
    END IF;
    reply := CASE WHEN reply IS NULL THEN part ELSE reply || ',' || part END;
  END LOOP;
  RETURN reply;
END $fn$;

