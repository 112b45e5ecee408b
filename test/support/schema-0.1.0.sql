-- The schema of nest-rate-limit 0.1.0 as postgresSchemaSql('__SCHEMA__') writes it: the functions an instance of
-- 0.1.0 calls, which every later version creates as they are here until a release drops them (CONTRIBUTING.md,
-- "Changing the PostgreSQL schema"; test/unit/released-sql-functions.spec.ts, test/postgres/migration.spec.ts).
CREATE SCHEMA IF NOT EXISTS "__SCHEMA__";
CREATE UNLOGGED TABLE IF NOT EXISTS "__SCHEMA__".rate_limit_state (
  key text PRIMARY KEY,
  state text NOT NULL,
  expires_at bigint NOT NULL,
  blocked_until bigint
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
  blocked_until bigint,
  PRIMARY KEY (key, period_start)
);
CREATE TABLE IF NOT EXISTS "__SCHEMA__".rate_limit_override (
  key_prefix text NOT NULL,
  policy text NOT NULL,
  identity text NOT NULL,
  override text NOT NULL,
  until bigint,
  PRIMARY KEY (key_prefix, policy, identity)
);
CREATE TABLE IF NOT EXISTS "__SCHEMA__".rate_limit_policy (
  key_prefix text NOT NULL,
  id text NOT NULL,
  shape text NOT NULL,
  record text NOT NULL,
  seen_at bigint NOT NULL,
  PRIMARY KEY (key_prefix, id, shape)
);

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

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_charged(st text, period bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN c.n > 0 THEN period::text || ':' || c.n::text END
  FROM (SELECT CASE WHEN amount > 2251799813685248 - d.n THEN greatest(d.n, 2251799813685248) ELSE d.n + amount END AS n
    FROM (SELECT CASE WHEN r.v[1] = period THEN r.v[2] ELSE 0 END AS n
      FROM (SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r
      OFFSET 0) d OFFSET 0) c
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

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fw_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_charged(st, "__SCHEMA__".rl_period_newest(st, now_ms / w), amount)
$fn$;

-- anchor 'first-request' (fixedWindowFromFirstRequest): the period is the window's start, in ms
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fwf_start(st text, w bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint + w > now_ms
    THEN split_part(st, ':', 1)::bigint ELSE now_ms END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fwf_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT d.* FROM (SELECT "__SCHEMA__".rl_fwf_start(st, w, now_ms) AS start OFFSET 0) p,
    LATERAL "__SCHEMA__".rl_period_decision(st, p.start, p.start + w - now_ms, lim, cost) d
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fwf_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_refunded(st, "__SCHEMA__".rl_fwf_start(st, w, now_ms), amount)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fwf_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_charged(st, "__SCHEMA__".rl_fwf_start(st, w, now_ms), amount)
$fn$;


-- The key's time: now, or its newest (last) entry's when that is later.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_key_time(st text, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN split_part(st, ',', -1) ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(now_ms, split_part(split_part(st, ',', -1), ':', 1)::bigint) ELSE now_ms END
$fn$;

-- The entries alive at the key's time (at_ms, rl_swl_key_time), oldest first, and the units they hold.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_live(st text, w bigint, now_ms bigint, OUT at_ms bigint, OUT times bigint[],
  OUT costs bigint[], OUT used bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  entry text;
  n int := 0;
BEGIN
  at_ms := "__SCHEMA__".rl_swl_key_time(st, now_ms); times := '{}'; costs := '{}'; used := 0;
  FOREACH entry IN ARRAY coalesce(string_to_array(st, ','), '{}') LOOP
    IF entry ~ '^-?[0-9]+:[0-9]+$' AND split_part(entry, ':', 1)::bigint + w > at_ms THEN
      n := n + 1; times[n] := split_part(entry, ':', 1)::bigint; costs[n] := split_part(entry, ':', 2)::bigint;
      used := used + costs[n];
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

-- The state string of entries with amount units more at at_ms, the newest time (none when amount is 0).
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_added(times bigint[], costs bigint[], at_ms bigint, amount bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  n int := cardinality(times);
BEGIN
  IF amount > 0 AND n > 0 AND times[n] = at_ms THEN
    costs[n] := costs[n] + amount;
  ELSIF amount > 0 THEN
    times[n + 1] := at_ms; costs[n + 1] := amount;
  END IF;
  RETURN "__SCHEMA__".rl_swl_join(times, costs, false);
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint,
  OUT remaining_now bigint, OUT reset_now bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := "__SCHEMA__".rl_swl_live(st, w, now_ms);
  n int := cardinality(live.times);
  freed bigint := 0;
BEGIN
  remaining_now := greatest(0, lim - live.used);
  reset_now := CASE WHEN n = 0 THEN 0 ELSE live.times[n] + w - now_ms END;
  IF cost <= lim AND live.used + cost <= lim THEN
    new_st := "__SCHEMA__".rl_swl_added(live.times, live.costs, live.at_ms, cost); allowed := 1;
    remaining := lim - live.used - cost; retry_ms := 0;
    -- the newest entry is the one at the key's time when the consume logged one
    reset_ms := CASE WHEN cost > 0 THEN live.at_ms + w - now_ms ELSE reset_now END;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := remaining_now; reset_ms := reset_now; retry_ms := -1;
  IF cost <= lim THEN
    -- the oldest entries leave the window first: wait for the one that frees enough units
    FOR i IN 1..n LOOP
      freed := freed + live.costs[i];
      IF freed >= live.used + cost - lim THEN retry_ms := live.times[i] + w - now_ms; EXIT; END IF;
    END LOOP;
  END IF;
END $fn$;

-- gives amount units back, the newest first: they are the ones that would otherwise weigh longest (a
-- concurrency limit gives its oldest leases back first: oldest_first)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_refunded_from(st text, w bigint, now_ms bigint, amount bigint,
  oldest_first boolean) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := "__SCHEMA__".rl_swl_live(st, w, now_ms);
  costs bigint[] := live.costs;
  n int := cardinality(live.costs);
  left_units bigint := amount;
  take bigint;
  j int;
BEGIN
  FOR i IN 1..n LOOP
    EXIT WHEN left_units <= 0;
    j := CASE WHEN oldest_first THEN i ELSE n + 1 - i END;
    take := least(costs[j], left_units);
    costs[j] := costs[j] - take;
    left_units := left_units - take;
  END LOOP;
  RETURN "__SCHEMA__".rl_swl_join(live.times, costs, true);
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$ SELECT "__SCHEMA__".rl_swl_refunded_from(st, w, now_ms, amount, false) $fn$;

-- logs an entry of amount at the key's time, past the limit (the live units up to 2251799813685248)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_charged(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT "__SCHEMA__".rl_swl_added(l.times, l.costs, l.at_ms, least(amount, greatest(0, 2251799813685248 - l.used)))
  FROM "__SCHEMA__".rl_swl_live(st, w, now_ms) l
$fn$;


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

-- counted past the limit, up to 2251799813685248 / w in the window
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.nc > 0 OR n.prev > 0 THEN n.idx::text || ':' || n.nc::text || ':' || n.prev::text END
  FROM (SELECT k.idx, k.prev, CASE WHEN amount > 2251799813685248 / w - k.cur THEN greatest(k.cur, 2251799813685248 / w)
      ELSE k.cur + amount END AS nc
    FROM "__SCHEMA__".rl_swc_window(st, w, now_ms) k OFFSET 0) n
$fn$;


-- units taken at now_ms, the time they are counted at and the rate they drain at until the next write; a
-- clock that steps back gives nothing back
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_bucket_taken(st text, algo int, lim bigint, w bigint, cap bigint, now_ms bigint)
RETURNS TABLE (taken bigint, at_ms bigint, rate bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN d.t IS NULL THEN 0 WHEN now_ms - d.a <= 0 THEN d.t
      WHEN now_ms - d.a >= d.t / d.r + 1 THEN 0 ELSE d.t - (now_ms - d.a) * d.r END,
    CASE WHEN d.t IS NOT NULL AND now_ms - d.a <= 0 THEN d.a ELSE now_ms END,
    d.r
  FROM (SELECT CASE r.kind WHEN 0 THEN r.v[1] WHEN 1 THEN r.v[1] WHEN 4 THEN greatest(0, cap * w - r.v[1])
        WHEN 5 THEN greatest(0, (r.v[1] - now_ms) * lim + r.v[2]) END AS t,
      CASE WHEN r.kind = 5 THEN now_ms ELSE r.v[2] END AS a,
      CASE WHEN r.kind = 1 THEN r.v[3] ELSE lim END AS r
    FROM (SELECT k.kind,
        CASE WHEN k.kind IS NOT NULL THEN string_to_array(st, CASE WHEN k.kind <= 1 THEN '@' ELSE ':' END)::bigint[] END AS v
      -- 1: this twin's state; 0: the previous twin's (no limit); 4, 5: the earlier token bucket's, GCRA's; NULL: none
      FROM (SELECT CASE WHEN st ~ '^[0-9]+@-?[0-9]+@[1-9][0-9]*$' THEN 1 WHEN st ~ '^[0-9]+@-?[0-9]+$' THEN 0
          WHEN algo = 4 AND st ~ '^[0-9]+:-?[0-9]+$' THEN 4 WHEN algo = 5 AND st ~ '^-?[0-9]+:[0-9]+$' THEN 5
        END AS kind OFFSET 0) k OFFSET 0) r OFFSET 0) d
$fn$;

-- a consume of nothing (cost 0) writes nothing: the state it reports is the one it was given
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_bucket_decision(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok OR cost = 0 THEN st ELSE v.nxt::text || '@' || v.at_ms::text || '@' || lim::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.full_units - v.nxt) / w ELSE greatest(0, v.full_units - v.taken) / w END,
    CASE WHEN v.ok AND cost > 0 THEN "__SCHEMA__".rl_ceil_div(v.nxt, lim) ELSE "__SCHEMA__".rl_ceil_div(v.taken, v.rate) END,
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN -1 ELSE "__SCHEMA__".rl_ceil_div(v.nxt - v.full_units, v.rate) END,
    greatest(0, v.full_units - v.taken) / w,
    "__SCHEMA__".rl_ceil_div(v.taken, v.rate)
  FROM (SELECT b.taken, b.at_ms, b.rate, f.full_units, b.taken + f.need AS nxt,
      cost <= cap AND b.taken + f.need <= f.full_units AS ok
    FROM (SELECT cap * w AS full_units, CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) f,
      LATERAL "__SCHEMA__".rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_bucket_refunded(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.nxt > 0 THEN r.nxt::text || '@' || r.at_ms::text || '@' || lim::text END
  FROM (SELECT b.at_ms, CASE WHEN amount > b.taken / w THEN 0 ELSE b.taken - amount * w END AS nxt
    FROM "__SCHEMA__".rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) r
$fn$;

-- taken may pass the capacity (a debt), up to the debt cap (maxTaken in token-bucket.ts: a key already past it
-- keeps what it owes); amount × w is not computed where it could leave bigint
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_bucket_charged(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.nxt > 0 THEN r.nxt::text || '@' || r.at_ms::text || '@' || lim::text END
  FROM (SELECT m.at_ms, CASE WHEN amount > (m.most - m.taken) / w THEN m.most ELSE m.taken + amount * w END AS nxt
    FROM (SELECT b.at_ms, b.taken, greatest(b.taken, least(4503599627370496, 2 * cap * w)) AS most
      FROM "__SCHEMA__".rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) m OFFSET 0) r
$fn$;


-- ceil(a × b / c) for a, b >= 0, c >= 1, exactly (a × b may leave bigint; the result may not)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_mul_div_ceil(a bigint, b bigint, c bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (div(x.p, c) + CASE WHEN mod(x.p, c) > 0 THEN 1 ELSE 0 END)::bigint FROM (SELECT a::numeric * b AS p) x
$fn$;

-- How a key stands at now_ms: its lead over now in µs (0: none or behind), the interval of the limit it was
-- written with, this limit's interval, the burst (bounded so that burst × interval <= 2251799813685248), and whether
-- the state carries its limit (a new state keeps it: per plan, or a static policy of the same name)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_standing(st text, lim bigint, w bigint, cap bigint, now_ms bigint)
RETURNS TABLE (lead bigint, tw bigint, t bigint, burst bigint, planned boolean, lim_w bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT greatest(0, s.tat - now_ms * 1000),
    CASE WHEN s.lim_w IS NULL OR s.lim_w = lim THEN p.t ELSE "__SCHEMA__".rl_ceil_div(1000 * w, s.lim_w) END,
    p.t, least(cap, 2251799813685248 / p.t), coalesce(s.kind = 2, false), coalesce(s.lim_w, lim)
  FROM (SELECT "__SCHEMA__".rl_ceil_div(1000 * w, lim) AS t OFFSET 0) p,
    LATERAL (SELECT CASE k.kind WHEN 1 THEN st::bigint WHEN 2 THEN split_part(st, '/', 1)::bigint
          WHEN 3 THEN b.at_ms * 1000 + "__SCHEMA__".rl_mul_div_ceil(b.taken, 1000, b.rate) END AS tat,
        CASE k.kind WHEN 2 THEN split_part(st, '/', 2)::bigint WHEN 3 THEN b.rate END AS lim_w, k.kind
      -- 1: a TAT; 2: a TAT and its limit; 3: the previous twins' state; NULL: none
      FROM (SELECT CASE WHEN st IS NULL OR st = '' THEN NULL WHEN st ~ '^-?[0-9]+$' THEN 1
          WHEN st ~ '^-?[0-9]+/[1-9][0-9]*$' THEN 2 ELSE 3 END AS kind OFFSET 0) k
        LEFT JOIN LATERAL "__SCHEMA__".rl_bucket_taken(st, 5, lim, w, cap, now_ms) b ON k.kind = 3
      OFFSET 0) s
$fn$;

-- a consume of nothing (cost 0) writes nothing: the state it reports is the one it was given
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_decision(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok OR cost = 0 THEN st
      ELSE (now_ms * 1000 + v.nxt)::text || CASE WHEN plan OR (v.planned AND v.lead > 0) THEN '/' || lim::text ELSE '' END END,
    v.ok::int,
    CASE WHEN v.ok AND cost > 0 THEN v.burst - "__SCHEMA__".rl_ceil_div(v.nxt, v.t) ELSE v.rem END,
    CASE WHEN v.ok AND cost > 0 THEN "__SCHEMA__".rl_ceil_div(v.nxt, 1000) ELSE "__SCHEMA__".rl_ceil_div(v.lead, 1000) END,
    CASE WHEN v.ok THEN 0 WHEN cost > v.burst THEN -1
      ELSE "__SCHEMA__".rl_ceil_div((v.lead - v.room)::bigint, 1000) END,
    v.rem,
    "__SCHEMA__".rl_ceil_div(v.lead, 1000)
  FROM (SELECT r.*, CASE WHEN r.ok AND cost > 0 THEN
        CASE WHEN r.t = r.tw THEN r.lead ELSE "__SCHEMA__".rl_mul_div_ceil(r.lead, r.t, r.tw) END + cost * r.t END AS nxt
    FROM (SELECT g.*, greatest(0, g.burst - "__SCHEMA__".rl_ceil_div(g.lead, g.tw)) AS rem, q.room,
        cost <= g.burst AND g.lead <= q.room AS ok
      FROM "__SCHEMA__".rl_gcra_standing(st, lim, w, cap, now_ms) g,
        LATERAL (SELECT CASE WHEN cost <= g.burst THEN (g.burst - cost)::numeric * g.tw END AS room) q
      OFFSET 0) r OFFSET 0) v
$fn$;

-- in the time of the limit the state was written with, which it keeps
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_refunded(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.back < r.lead THEN (now_ms * 1000 + r.lead - r.back::bigint)::text
      || CASE WHEN plan OR r.planned THEN '/' || r.lim_w::text ELSE '' END END
  FROM (SELECT g.lead, g.planned, g.lim_w, amount::numeric * g.tw AS back
    FROM "__SCHEMA__".rl_gcra_standing(st, lim, w, cap, now_ms) g OFFSET 0) r
$fn$;

-- past the burst (a debt), the lead clamped at the debt cap (maxLeadUs in gcra.ts: a key already past it keeps
-- it); a key still counting in the time of the limit it was written with, which it keeps, a lapsed one at this
-- limit (amount × interval is computed only below the bound)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_charged(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (now_ms * 1000 + CASE WHEN amount > (c.most - c.lead) / c.tw THEN c.most ELSE c.lead + amount * c.tw END)::text
      || CASE WHEN plan OR (c.planned AND c.lead > 0) THEN '/' || c.lim_w::text ELSE '' END
  FROM (SELECT g.lead, g.planned, CASE WHEN g.lead > 0 THEN g.tw ELSE g.t END AS tw,
      CASE WHEN g.lead > 0 THEN g.lim_w ELSE lim END AS lim_w,
      greatest(g.lead, least(2251799813685248, 2 * g.burst * g.t)) AS most
    FROM "__SCHEMA__".rl_gcra_standing(st, lim, w, cap, now_ms) g OFFSET 0) c
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_conc_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$ SELECT "__SCHEMA__".rl_swl_refunded_from(st, w, now_ms, amount, true) $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_decision(st text, lim bigint, start_ms bigint, end_ms bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_decision(st, start_ms, end_ms - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_refunded(st text, start_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_refunded(st, start_ms, amount)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_charged(st text, start_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_charged(st, start_ms, amount)
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_algo_decision(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_fw_decision(st, lim, w, now_ms, cost) WHERE algo = 1
  UNION ALL SELECT (d.x).* FROM (SELECT "__SCHEMA__".rl_swl_decision(st, lim, w, now_ms, cost) AS x OFFSET 0) d
    WHERE algo = 2 OR algo = 7
  UNION ALL SELECT * FROM "__SCHEMA__".rl_swc_decision(st, lim, w, now_ms, cost) WHERE algo = 3
  UNION ALL SELECT * FROM "__SCHEMA__".rl_bucket_decision(st, algo, lim, w, cap, now_ms, cost) WHERE algo = 4
  UNION ALL SELECT * FROM "__SCHEMA__".rl_gcra_decision(st, algo = 9, lim, w, cap, now_ms, cost)
    WHERE algo = 5 OR algo = 9
  UNION ALL SELECT * FROM "__SCHEMA__".rl_quota_decision(st, lim, w, cap, now_ms, cost) WHERE algo = 6
  UNION ALL SELECT * FROM "__SCHEMA__".rl_fwf_decision(st, lim, w, now_ms, cost) WHERE algo = 8
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_algo_refunded(algo int, st text, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_fw_refunded(st, w, now_ms, amount) WHERE algo = 1
  UNION ALL SELECT "__SCHEMA__".rl_swl_refunded(st, w, now_ms, amount) WHERE algo = 2
  UNION ALL SELECT * FROM "__SCHEMA__".rl_swc_refunded(st, w, now_ms, amount) WHERE algo = 3
  UNION ALL SELECT * FROM "__SCHEMA__".rl_bucket_refunded(st, algo, lim, w, cap, now_ms, amount) WHERE algo = 4
  UNION ALL SELECT * FROM "__SCHEMA__".rl_gcra_refunded(st, algo = 9, lim, w, cap, now_ms, amount) WHERE algo = 5 OR algo = 9
  UNION ALL SELECT * FROM "__SCHEMA__".rl_quota_refunded(st, w, amount) WHERE algo = 6
  UNION ALL SELECT "__SCHEMA__".rl_conc_refunded(st, w, now_ms, amount) WHERE algo = 7
  UNION ALL SELECT * FROM "__SCHEMA__".rl_fwf_refunded(st, w, now_ms, amount) WHERE algo = 8
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_algo_charged(algo int, st text, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_fw_charged(st, w, now_ms, amount) WHERE algo = 1
  UNION ALL SELECT "__SCHEMA__".rl_swl_charged(st, w, now_ms, amount) WHERE algo = 2
  UNION ALL SELECT * FROM "__SCHEMA__".rl_swc_charged(st, w, now_ms, amount) WHERE algo = 3
  UNION ALL SELECT * FROM "__SCHEMA__".rl_bucket_charged(st, algo, lim, w, cap, now_ms, amount) WHERE algo = 4
  UNION ALL SELECT * FROM "__SCHEMA__".rl_gcra_charged(st, algo = 9, lim, w, cap, now_ms, amount) WHERE algo = 5 OR algo = 9
  UNION ALL SELECT * FROM "__SCHEMA__".rl_quota_charged(st, w, amount) WHERE algo = 6
  UNION ALL SELECT * FROM "__SCHEMA__".rl_fwf_charged(st, w, now_ms, amount) WHERE algo = 8
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_load_state(k text, algo int, w bigint, cap bigint, now_ms bigint,
  OUT st text, OUT until_ms bigint, OUT w_ms bigint, OUT cap_ms bigint)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  qs bigint;
  qu bigint;
  qe bigint;
BEGIN
  w_ms := w; cap_ms := cap;
  IF algo = 6 THEN
    SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE u.key = k ORDER BY u.period_start DESC LIMIT 1 INTO qs, qu, qe, until_ms;
    IF qs >= w THEN
      st := qs::text || ':' || qu::text;
      IF qs > w THEN w_ms := qs; cap_ms := qe; END IF;
    END IF;
  ELSE
    SELECT s.state, s.blocked_until INTO st, until_ms FROM "__SCHEMA__".rate_limit_state s
      WHERE s.key = k AND s.expires_at > now_ms;
  END IF;
  until_ms := coalesce(until_ms, 0);
END $fn$;

-- Writes the state of item (key, algo) (none: st NULL or ''), with a block until until_ms while
-- that lasts: quotas to the durable table, per period (w is its start), rate limits with their expiry.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_save_state(algo int, k text, st text, reset_ms bigint, slack bigint, now_ms bigint,
  lim bigint, w bigint, cap bigint, until_ms bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  blocked boolean := until_ms > now_ms;
BEGIN
  IF algo = 6 THEN
    IF st IS NOT NULL OR blocked THEN
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      VALUES (k, w, cap, coalesce(split_part(st, ':', 2)::bigint, 0), lim, CASE WHEN blocked THEN until_ms END)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until;
    ELSE
      DELETE FROM "__SCHEMA__".rate_limit_quota_usage WHERE key = k AND period_start = w;
    END IF;
    IF NOT blocked THEN
      -- a block kept on an earlier period's row ends too
      UPDATE "__SCHEMA__".rate_limit_quota_usage SET blocked_until = NULL
        WHERE key = k AND period_start < w AND blocked_until IS NOT NULL;
    END IF;
  ELSIF blocked THEN
    INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
    VALUES (k, coalesce(st, ''), now_ms + greatest(reset_ms, until_ms - now_ms) + slack, until_ms)
    ON CONFLICT (key) DO UPDATE
      SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until;
  ELSIF st IS NOT NULL AND st <> '' THEN
    -- a state whose reset has passed on this clock is kept for the slack: a clock behind may still count it
    INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at) VALUES (k, st, now_ms + greatest(reset_ms, 0) + slack)
    ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = NULL;
  ELSE
    DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = k;
  END IF;
END $fn$;

-- How a key stands, as peek reports it: allowed (1, or 0 with the wait of a cost of 1; 2: blocked),
-- remaining, reset_ms, retry_ms.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_standing(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  until_ms bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $fn$
  SELECT CASE WHEN until_ms > now_ms THEN ARRAY[2, 0, until_ms - now_ms, until_ms - now_ms]::bigint[]
    WHEN r.remaining >= 1 THEN ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[]
    ELSE ARRAY[0, r.remaining, r.reset_ms,
      (SELECT p.retry_ms FROM "__SCHEMA__".rl_algo_decision(algo, st, lim, w, cap, now_ms, 1) p)] END
  FROM "__SCHEMA__".rl_algo_decision(algo, st, lim, w, cap, now_ms, 0) r
$fn$;

-- Forgets the keys' state and blocks; a quota's usage of the periods before the caller's stays (billing).
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_forget(keys text[], algos int[], ws bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = ANY(keys);
  DELETE FROM "__SCHEMA__".rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
    WHERE u.a = 6 AND q.key = u.k AND q.period_start >= u.w;
  UPDATE "__SCHEMA__".rate_limit_quota_usage q SET blocked_until = NULL FROM unnest(keys, algos) AS u(k, a)
    WHERE u.a = 6 AND q.key = u.k AND q.blocked_until IS NOT NULL;
END $fn$;


-- The Postgres twin of the Redis script's dispatcher for what is not a consume: one call for every item of a
-- request.
--   op       'peek' | 'refund' | 'charge' | 'reset' | 'block' | 'unblock'
--   now_in   current time in ms since the epoch, or NULL to take the database's clock
--   slack    ms added to every row's expiry
--   keys, algos, lims, ws, caps, costs: per item, as in the Redis script ('block': the block's length in ms
--            as the cost; 'charge': 0 for an item not to charge, a shadow item)
-- Returns 4 bigints per item: allowed (0/1, 2: denied and blocked), remaining, reset_ms, retry_ms
-- (-1: the cost can never fit); 'refund' and 'charge' as a peek of each key afterwards; the others none.
-- Per-key transaction-level advisory locks, taken in key order, make each call atomic under concurrency.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
  lims bigint[], ws bigint[], caps bigint[], costs bigint[]) RETURNS bigint[]
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  now_ms bigint := coalesce(now_in, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
  n int := coalesce(array_length(keys, 1), 0);
  original text[];
  untils bigint[];
  working text[];
  st text;
  r record;
  l record;
  first int;
  res bigint[] := '{}';
BEGIN
  IF op = 'reset' THEN
    PERFORM "__SCHEMA__".rl_forget(keys, algos, ws);
    RETURN res;
  END IF;
  IF op = 'charge' AND 7 = ANY(algos) THEN
    RAISE EXCEPTION 'nest-rate-limit: a concurrency limit cannot be charged';
  END IF;
  IF n = 1 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(keys[1], 0));
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(keys) AS u ORDER BY u;
  END IF;
  -- the first item of each key reads it; later items of the same key share that state, block and period
  original := array_fill(NULL::text, ARRAY[n]);
  untils := array_fill(0::bigint, ARRAY[n]);
  FOR i IN 1..n LOOP
    first := i;
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN first := j; EXIT; END IF; END LOOP;
    IF first = i THEN
      l := "__SCHEMA__".rl_load_state(keys[i], algos[i], ws[i], caps[i], now_ms);
      original[i] := l.st; untils[i] := l.until_ms; ws[i] := l.w_ms; caps[i] := l.cap_ms;
    ELSE
      original[i] := original[first]; untils[i] := untils[first];
      IF algos[i] = 6 THEN ws[i] := ws[first]; caps[i] := caps[first]; END IF;
    END IF;
  END LOOP;

  IF op = 'peek' THEN
    FOR i IN 1..n LOOP
      res := res || "__SCHEMA__".rl_standing(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, untils[i]);
    END LOOP;
    RETURN res;
  END IF;

  -- block: until now + the item's cost (ms), the state kept; unblock: the state kept, without its block
  IF op = 'block' OR op = 'unblock' THEN
    FOR i IN 1..n LOOP
      SELECT * INTO r FROM "__SCHEMA__".rl_algo_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      PERFORM "__SCHEMA__".rl_save_state(algos[i], keys[i], original[i], r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i],
        CASE WHEN op = 'block' THEN now_ms + costs[i] ELSE 0 END);
    END LOOP;
    RETURN res;
  END IF;

  IF op <> 'refund' AND op <> 'charge' THEN
    RAISE EXCEPTION 'nest-rate-limit: rate_limit() has no operation %', op;
  END IF;
  -- refund, or charge: each item's cost given back or taken without deciding (counted even past the limit, a
  -- debt later consumes wait out; a charge of 0 takes nothing), on the state the items of its key before it
  -- left; a block stays as it is (the units charged count once it ends)
  working := original;
  FOR i IN 1..n LOOP
    st := working[i];
    FOR j IN 1..i - 1 LOOP IF keys[j] = keys[i] THEN st := working[j]; END IF; END LOOP;
    IF op = 'refund' THEN
      SELECT x.new_st INTO st FROM "__SCHEMA__".rl_algo_refunded(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
    ELSIF costs[i] > 0 THEN
      SELECT x.new_st INTO st FROM "__SCHEMA__".rl_algo_charged(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
    END IF;
    working[i] := st;
    SELECT * INTO r FROM "__SCHEMA__".rl_algo_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
    PERFORM "__SCHEMA__".rl_save_state(algos[i], keys[i], st, r.reset_ms, slack, now_ms, lims[i], ws[i], caps[i], untils[i]);
    res := res || "__SCHEMA__".rl_standing(algos[i], st, lims[i], ws[i], caps[i], now_ms, untils[i]);
  END LOOP;
  RETURN res;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_consume_item(p_slack bigint, p_algo int, p_now bigint, p_key text, p_lim bigint,
  p_w bigint, p_cap bigint, p_cost bigint, p_shadow boolean, p_block bigint) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  reply text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
      CASE p_algo
      WHEN 1 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(1, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 2 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(2, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 3 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(3, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 4 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(4, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 5 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(5, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 6 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN true THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END END AS st,
            coalesce(CASE WHEN true THEN q.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE true AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(6, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 7 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(7, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 8 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(8, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      WHEN 9 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(9, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      ELSE
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN it.a = 6 THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END ELSE s.state END AS st,
            coalesce(CASE WHEN it.a = 6 THEN q.blocked_until ELSE s.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE it.a = 6 AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a <> 6
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO reply FROM decided d;
      END CASE;
  RETURN reply;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rate_limit_consume(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[], p_shadows boolean[], p_blocks bigint[], p_repeated boolean) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  db_now bigint;
  reply text;
  part text;
BEGIN
  IF p_nows IS NULL THEN
    db_now := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  END IF;
  IF cardinality(p_keys) = 1 THEN
    RETURN "__SCHEMA__".rl_consume_item(p_slack, p_algo, coalesce(p_nows[1], db_now), p_keys[1], p_lims[1], p_ws[1],
      p_caps[1], p_costs[1], coalesce(p_shadows[1], false), coalesce(p_blocks[1], 0));
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(p_keys) AS u ORDER BY u;
  FOR rnd IN 1..cardinality(p_rounds) LOOP
    IF p_repeated THEN

    WITH RECURSIVE c AS MATERIALIZED (
      SELECT r.*, row_number() OVER (PARTITION BY r.req, r.k ORDER BY r.i) AS o FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN it.a = 6 THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END ELSE s.state END AS st,
            coalesce(CASE WHEN it.a = 6 THEN q.blocked_until ELSE s.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE it.a = 6 AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) r
    ), layered AS (
      SELECT c.i, c.req, c.k, c.a, c.lim, c.cost, c.now_ms, c.sh, c.bl, c.st, c.until_ms, c.w, c.cap, c.o, c.st AS st_in, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now
      FROM c CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x WHERE c.o = 1
      UNION ALL
      SELECT n.i, n.req, n.k, n.a, n.lim, n.cost, n.now_ms, n.sh, n.bl, n.st, n.until_ms, n.w, n.cap, n.o, y.st_in, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, p.remaining_now, p.reset_now
      FROM layered p JOIN c n ON n.req = p.req AND n.k = p.k AND n.o = p.o + 1
        CROSS JOIN LATERAL (SELECT CASE WHEN p.until_ms <= p.now_ms AND p.allowed = 1 AND p.cost > 0 THEN p.new_st
          ELSE p.st_in END AS st_in) y
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(n.a, y.st_in, n.lim, n.w, n.cap, n.now_ms, n.cost) x
    ), decided AS MATERIALIZED (
      SELECT w.*, w.o = max(w.o) FILTER (WHERE w.consumes OR w.blocks > 0) OVER (PARTITION BY w.req, w.k) AS writer
      FROM (SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
        FROM (SELECT l.*, l.until_ms <= l.now_ms AND l.allowed = 1 AS passes, bool_and((l.until_ms <= l.now_ms AND l.allowed = 1 OR l.sh)) OVER (PARTITION BY l.req) AS all_ok
          FROM layered l) r) w
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.writer AND d.a <> 6
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.writer AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
    ELSIF p_single THEN
      CASE p_algo
      WHEN 1 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(1, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 2 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(2, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 3 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(3, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 4 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(4, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 5 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(5, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 6 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN true THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END END AS st,
            coalesce(CASE WHEN true THEN q.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE true AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(6, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 7 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(7, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 8 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(8, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 9 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(9, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      ELSE
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          (c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN it.a = 6 THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END ELSE s.state END AS st,
            coalesce(CASE WHEN it.a = 6 THEN q.blocked_until ELSE s.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE it.a = 6 AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a <> 6
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      END CASE;
    ELSE
      CASE p_algo
      WHEN 1 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(1, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 2 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(2, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 3 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(3, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 4 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(4, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 5 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(5, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 6 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN true THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END END AS st,
            coalesce(CASE WHEN true THEN q.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE true AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(6, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 7 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(7, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 8 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(8, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      WHEN 9 THEN
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, s.state AS st,
            coalesce(s.blocked_until, 0) AS until_ms,
            it.w AS w,
            it.cap AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON s.key = it.k AND s.expires_at > it.now_ms) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(9, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0)
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      ELSE
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes, CASE WHEN r.until_ms <= r.now_ms AND r.allowed = 0 AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          c.until_ms <= c.now_ms AND x.allowed = 1 AS passes,
          bool_and((c.until_ms <= c.now_ms AND x.allowed = 1 OR c.sh)) OVER (PARTITION BY c.req) AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, CASE WHEN it.a = 6 THEN CASE WHEN q.period_start >= it.w THEN q.period_start::text || ':' || q.used::text END ELSE s.state END AS st,
            coalesce(CASE WHEN it.a = 6 THEN q.blocked_until ELSE s.blocked_until END, 0) AS until_ms,
            CASE WHEN q.period_start > it.w THEN q.period_start ELSE it.w END AS w,
            CASE WHEN q.period_start > it.w THEN q.period_end ELSE it.cap END AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          LEFT JOIN "__SCHEMA__".rate_limit_state s ON it.a <> 6 AND s.key = it.k AND s.expires_at > it.now_ms
          LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM "__SCHEMA__".rate_limit_quota_usage u WHERE it.a = 6 AND u.key = it.k ORDER BY u.period_start DESC LIMIT 1) q ON true) c
        CROSS JOIN LATERAL "__SCHEMA__".rl_algo_decision(c.a, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    ), written AS (
      INSERT INTO "__SCHEMA__".rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a <> 6
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    ), counted AS (
      INSERT INTO "__SCHEMA__".rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (d.consumes OR d.blocks > 0) AND d.a = 6
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )
    SELECT string_agg(CASE WHEN d.until_ms > d.now_ms THEN '2' || ',' || '0' || ',' || (d.until_ms - d.now_ms)::text || ',' || (d.until_ms - d.now_ms)::text
        WHEN d.blocks > 0 THEN '2' || ',' || (d.remaining)::text || ',' || (greatest(d.reset_ms, d.blocks))::text || ',' || (CASE WHEN d.retry_ms = -1 THEN -1 ELSE greatest(d.retry_ms, d.blocks) END)::text
        WHEN d.all_ok OR NOT d.passes THEN (d.allowed)::text || ',' || (d.remaining)::text || ',' || (d.reset_ms)::text || ',' || (d.retry_ms)::text
        ELSE '1' || ',' || (d.remaining_now)::text || ',' || (d.reset_now)::text || ',' || '0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;
      END CASE;
    END IF;
    reply := CASE WHEN reply IS NULL THEN part ELSE reply || ',' || part END;
  END LOOP;
  RETURN reply;
END $fn$;


