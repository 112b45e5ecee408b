-- The schema of nestjs-rate-limit 0.1.0 (git c8fb7f8) as postgresSchemaSql('__SCHEMA__') wrote it:
-- test/postgres/migration.spec.ts migrates it to the current one.
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

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_ceil_div(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN (a / b) * b < a THEN a / b + 1 ELSE a / b END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_step(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  r record;
BEGIN
  CASE algo
    WHEN 1 THEN r := "__SCHEMA__".rl_fw_step(st, lim, w, cap, now_ms, cost);
    WHEN 2 THEN r := "__SCHEMA__".rl_swl_step(st, lim, w, cap, now_ms, cost);
    WHEN 3 THEN r := "__SCHEMA__".rl_swc_step(st, lim, w, cap, now_ms, cost);
    WHEN 4 THEN r := "__SCHEMA__".rl_tb_step(st, lim, w, cap, now_ms, cost);
    WHEN 6 THEN r := "__SCHEMA__".rl_quota_step(st, lim, w, cap, now_ms, cost);
    ELSE r := "__SCHEMA__".rl_gcra_step(st, lim, w, cap, now_ms, cost);
  END CASE;
  new_st := r.new_st; allowed := r.allowed; remaining := r.remaining; reset_ms := r.reset_ms; retry_ms := r.retry_ms;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_refund(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
  RETURN CASE algo
    WHEN 1 THEN "__SCHEMA__".rl_fw_refund(st, lim, w, cap, now_ms, amount)
    WHEN 2 THEN "__SCHEMA__".rl_swl_refund(st, lim, w, cap, now_ms, amount)
    WHEN 3 THEN "__SCHEMA__".rl_swc_refund(st, lim, w, cap, now_ms, amount)
    WHEN 4 THEN "__SCHEMA__".rl_tb_refund(st, lim, w, cap, now_ms, amount)
    WHEN 6 THEN "__SCHEMA__".rl_quota_refund(st, lim, w, cap, now_ms, amount)
    ELSE "__SCHEMA__".rl_gcra_refund(st, lim, w, cap, now_ms, amount)
  END;
END $fn$;

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
CREATE OR REPLACE FUNCTION "__SCHEMA__".rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
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
    DELETE FROM "__SCHEMA__".rate_limit_state WHERE key = ANY(keys);
    DELETE FROM "__SCHEMA__".rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
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
      r := "__SCHEMA__".rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        p := "__SCHEMA__".rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 1);
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
      st := "__SCHEMA__".rl_refund(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
      working[i] := st;
      r := "__SCHEMA__".rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        p := "__SCHEMA__".rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, 1);
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
    r := "__SCHEMA__".rl_step(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
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
      r := "__SCHEMA__".rl_step(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
    ELSE
      res := res || results[(i - 1) * 4 + 1:(i - 1) * 4 + 4];
    END IF;
  END LOOP;
  RETURN res;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_newest(st text, period bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint > period
    THEN split_part(st, ':', 1)::bigint ELSE period END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_step(st text, period bigint, period_end bigint, lim bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  cnt bigint := 0;
BEGIN
  IF st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint = period THEN cnt := split_part(st, ':', 2)::bigint; END IF;
  IF cost > lim THEN
    new_st := st; allowed := 0; remaining := greatest(0, lim - cnt);
    reset_ms := CASE WHEN cnt > 0 THEN period_end ELSE 0 END; retry_ms := -1; RETURN;
  END IF;
  IF cnt + cost <= lim THEN
    IF cnt + cost = 0 THEN new_st := NULL; allowed := 1; remaining := lim; reset_ms := 0; retry_ms := 0; RETURN; END IF;
    new_st := period || ':' || (cnt + cost); allowed := 1; remaining := lim - cnt - cost; reset_ms := period_end; retry_ms := 0;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := greatest(0, lim - cnt); reset_ms := period_end; retry_ms := period_end;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_period_refund(st text, period bigint, amount bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  cnt bigint;
BEGIN
  IF st IS NULL OR st !~ '^-?[0-9]+:[0-9]+$' OR split_part(st, ':', 1)::bigint <> period THEN RETURN NULL; END IF;
  cnt := greatest(0, split_part(st, ':', 2)::bigint - amount);
  RETURN CASE WHEN cnt > 0 THEN period || ':' || cnt END;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fw_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_step(st, "__SCHEMA__".rl_period_newest(st, now_ms / w),
    ("__SCHEMA__".rl_period_newest(st, now_ms / w) + 1) * w - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_fw_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT "__SCHEMA__".rl_period_refund(st, "__SCHEMA__".rl_period_newest(st, now_ms / w), amount)
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_alive(st text, w bigint, now_ms bigint, OUT times bigint[], OUT costs bigint[])
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  entry text;
BEGIN
  times := '{}'; costs := '{}';
  IF st IS NULL OR st = '' THEN RETURN; END IF;
  FOREACH entry IN ARRAY string_to_array(st, ',') LOOP
    IF entry ~ '^-?[0-9]+:[0-9]+$' AND split_part(entry, ':', 1)::bigint + w > now_ms THEN
      times := times || split_part(entry, ':', 1)::bigint;
      costs := costs || split_part(entry, ':', 2)::bigint;
    END IF;
  END LOOP;
END $fn$;

-- The key's time: now, or its newest (last) entry's when that is later.
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_key_time(st text, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '(^|,)-?[0-9]+:[0-9]+$'
    THEN greatest(now_ms, split_part(substring(st FROM '-?[0-9]+:[0-9]+$'), ':', 1)::bigint) ELSE now_ms END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_encode(times bigint[], costs bigint[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN coalesce(array_length(times, 1), 0) = 0 THEN NULL
    ELSE (SELECT string_agg(t || ':' || c, ',' ORDER BY i) FROM unnest(times, costs) WITH ORDINALITY AS e(t, c, i)) END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  a record;
  times bigint[];
  costs bigint[];
  n int;
  used bigint := 0;
  need bigint;
  freed bigint := 0;
  at_ms bigint := "__SCHEMA__".rl_swl_key_time(st, now_ms);
BEGIN
  a := "__SCHEMA__".rl_swl_alive(st, w, at_ms);
  times := a.times; costs := a.costs; n := coalesce(array_length(times, 1), 0);
  FOR i IN 1..n LOOP used := used + costs[i]; END LOOP;
  IF cost <= lim AND used + cost <= lim THEN
    IF cost > 0 THEN
      IF n > 0 AND times[n] = at_ms THEN
        costs[n] := costs[n] + cost;
      ELSE
        times := times || at_ms;
        costs := costs || cost;
        n := n + 1;
      END IF;
    END IF;
    new_st := "__SCHEMA__".rl_swl_encode(times, costs); allowed := 1; remaining := lim - used - cost; retry_ms := 0;
    reset_ms := CASE WHEN n = 0 THEN 0 ELSE times[n] + w - now_ms END;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := greatest(0, lim - used); retry_ms := -1;
  reset_ms := CASE WHEN n = 0 THEN 0 ELSE times[n] + w - now_ms END;
  IF cost <= lim THEN
    need := used + cost - lim;
    FOR i IN 1..n LOOP
      freed := freed + costs[i];
      IF freed >= need THEN retry_ms := times[i] + w - now_ms; EXIT; END IF;
    END LOOP;
  END IF;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swl_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  a record;
  times bigint[];
  costs bigint[];
  n int;
  left_units bigint := amount;
  take bigint;
  i int;
  kept_t bigint[] := '{}';
  kept_c bigint[] := '{}';
BEGIN
  a := "__SCHEMA__".rl_swl_alive(st, w, "__SCHEMA__".rl_swl_key_time(st, now_ms));
  times := a.times; costs := a.costs; n := coalesce(array_length(times, 1), 0);
  i := n;
  WHILE i >= 1 AND left_units > 0 LOOP
    take := least(costs[i], left_units);
    costs[i] := costs[i] - take;
    left_units := left_units - take;
    i := i - 1;
  END LOOP;
  FOR j IN 1..n LOOP
    IF costs[j] > 0 THEN kept_t := kept_t || times[j]; kept_c := kept_c || costs[j]; END IF;
  END LOOP;
  RETURN "__SCHEMA__".rl_swl_encode(kept_t, kept_c);
END $fn$;


-- The window a key counts in: this instance's, or the later one the key holds (a clock ahead wrote it).
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_newest(st text, idx bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint > idx
    THEN split_part(st, ':', 1)::bigint ELSE idx END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_normalize(st text, idx bigint, OUT cur bigint, OUT prev bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  w bigint;
BEGIN
  cur := 0; prev := 0;
  IF st IS NULL OR st !~ '^-?[0-9]+:[0-9]+:[0-9]+$' THEN RETURN; END IF;
  w := split_part(st, ':', 1)::bigint;
  IF w = idx THEN cur := split_part(st, ':', 2)::bigint; prev := split_part(st, ':', 3)::bigint;
  ELSIF w = idx - 1 THEN prev := split_part(st, ':', 2)::bigint; END IF;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := "__SCHEMA__".rl_swc_newest(st, now_ms / w);
  at_ms bigint := greatest(now_ms, "__SCHEMA__".rl_swc_newest(st, now_ms / w) * w);
  elapsed bigint := at_ms - idx * w;
  n record;
  used bigint;
  capacity bigint := lim * w;
  nxt bigint;
  -- a cost beyond the limit never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > lim THEN 0 ELSE cost * w END;
BEGIN
  n := "__SCHEMA__".rl_swc_normalize(st, idx);
  used := n.cur * w + n.prev * (w - elapsed);
  IF cost <= lim AND used + need <= capacity THEN
    nxt := n.cur + cost;
    new_st := CASE WHEN nxt > 0 OR n.prev > 0 THEN idx || ':' || nxt || ':' || n.prev END;
    allowed := 1; remaining := (capacity - used - need) / w; retry_ms := 0;
    reset_ms := CASE WHEN nxt > 0 THEN (idx + 2) * w - now_ms WHEN n.prev > 0 THEN (idx + 1) * w - now_ms ELSE 0 END;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := greatest(0, capacity - used) / w;
  reset_ms := CASE WHEN n.cur > 0 THEN (idx + 2) * w - now_ms WHEN n.prev > 0 THEN (idx + 1) * w - now_ms ELSE 0 END;
  IF cost > lim THEN retry_ms := -1;
  ELSIF n.cur + cost <= lim THEN retry_ms := w - ((lim - n.cur - cost) * w) / n.prev - elapsed + (at_ms - now_ms);
  ELSE retry_ms := (idx + 1) * w + greatest(0, w - ((lim - cost) * w) / n.cur) - now_ms;
  END IF;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_swc_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := "__SCHEMA__".rl_swc_newest(st, now_ms / w);
  n record;
  from_cur bigint;
  nc bigint;
  np bigint;
BEGIN
  n := "__SCHEMA__".rl_swc_normalize(st, idx);
  from_cur := least(n.cur, amount);
  np := greatest(0, n.prev - (amount - from_cur));
  nc := n.cur - from_cur;
  RETURN CASE WHEN nc > 0 OR np > 0 THEN idx || ':' || nc || ':' || np END;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_refill(st text, full_units bigint, lim bigint, now_ms bigint,
  OUT tokens bigint, OUT at_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  t bigint;
  a bigint;
BEGIN
  IF st IS NULL OR st !~ '^[0-9]+:-?[0-9]+$' THEN tokens := full_units; at_ms := now_ms; RETURN; END IF;
  t := split_part(st, ':', 1)::bigint;
  a := split_part(st, ':', 2)::bigint;
  IF now_ms - a <= 0 THEN tokens := least(full_units, t); at_ms := a; RETURN; END IF;
  -- least() before the product could overflow: elapsed beyond the time to fill up refills to full
  IF now_ms - a >= full_units / lim + 1 THEN tokens := full_units;
  ELSE tokens := least(full_units, t + (now_ms - a) * lim); END IF;
  at_ms := now_ms;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  r record;
  -- a cost beyond the capacity never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > cap THEN 0 ELSE cost * w END;
BEGIN
  r := "__SCHEMA__".rl_tb_refill(st, full_units, lim, now_ms);
  IF cost > cap OR need > r.tokens THEN
    new_st := st; allowed := 0; remaining := r.tokens / w; reset_ms := "__SCHEMA__".rl_ceil_div(full_units - r.tokens, lim);
    retry_ms := CASE WHEN cost > cap THEN -1 ELSE "__SCHEMA__".rl_ceil_div(need - r.tokens, lim) END;
    RETURN;
  END IF;
  new_st := CASE WHEN r.tokens - need < full_units THEN (r.tokens - need) || ':' || r.at_ms END;
  allowed := 1; remaining := (r.tokens - need) / w;
  reset_ms := "__SCHEMA__".rl_ceil_div(full_units - r.tokens + need, lim); retry_ms := 0;
END $fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_tb_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  r record;
  nxt bigint;
BEGIN
  r := "__SCHEMA__".rl_tb_refill(st, full_units, lim, now_ms);
  nxt := CASE WHEN amount >= cap THEN full_units ELSE least(full_units, r.tokens + amount * w) END;
  RETURN CASE WHEN nxt < full_units THEN nxt || ':' || r.at_ms END;
END $fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_ahead(st text, lim bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(0, (split_part(st, ':', 1)::bigint - now_ms) * lim + split_part(st, ':', 2)::bigint) ELSE 0 END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_at(ahead bigint, lim bigint, now_ms bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN ahead = 0 THEN NULL ELSE (now_ms + ahead / lim) || ':' || (ahead - (ahead / lim) * lim) END
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  ahead bigint := "__SCHEMA__".rl_gcra_ahead(st, lim, now_ms);
  -- a cost beyond the capacity never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > cap THEN 0 ELSE cost * w END;
BEGIN
  IF cost > cap OR ahead + need > full_units THEN
    new_st := st; allowed := 0; remaining := greatest(0, full_units - ahead) / w;
    reset_ms := "__SCHEMA__".rl_ceil_div(ahead, lim);
    retry_ms := CASE WHEN cost > cap THEN -1 ELSE "__SCHEMA__".rl_ceil_div(ahead + need - full_units, lim) END;
    RETURN;
  END IF;
  new_st := "__SCHEMA__".rl_gcra_at(ahead + need, lim, now_ms); allowed := 1;
  remaining := (full_units - ahead - need) / w; reset_ms := "__SCHEMA__".rl_ceil_div(ahead + need, lim); retry_ms := 0;
END $fn$;

-- amount × w is computed only when it is at most what is ahead (a larger amount empties the key)
CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_gcra_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT "__SCHEMA__".rl_gcra_at(CASE WHEN amount > a.ahead / w THEN 0 ELSE a.ahead - amount * w END, lim, now_ms)
  FROM (SELECT "__SCHEMA__".rl_gcra_ahead(st, lim, now_ms) AS ahead) a
$fn$;


CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM "__SCHEMA__".rl_period_step(st, w, cap - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION "__SCHEMA__".rl_quota_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT "__SCHEMA__".rl_period_refund(st, w, amount)
$fn$;

