/**
 * The general entry point, rate_limit(op, ...): peek, refund and reset, and the consumes that
 * rate_limit_consume does not take (a request with two items on one key, which decide one after the other).
 * Item by item in PL/pgSQL, through the algorithms' SQL twins. Its signature is the one of the store's first
 * schema: an application that still calls it keeps working once the schema is migrated.
 */
export const operationsSql = (S: string): string => `
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
-- Consumes go through rate_limit_consume, but for a request with two items on one key.
CREATE OR REPLACE FUNCTION ${S}.rate_limit(op text, now_in bigint, slack bigint, keys text[], algos int[],
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
    DELETE FROM ${S}.rate_limit_state WHERE key = ANY(keys);
    DELETE FROM ${S}.rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
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
      SELECT * INTO r FROM ${S}.rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        SELECT * INTO p FROM ${S}.rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 1);
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
      SELECT x.new_st INTO st FROM ${S}.rl_refunded(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]) x;
      working[i] := st;
      SELECT * INTO r FROM ${S}.rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 0);
      IF r.remaining >= 1 THEN res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
      ELSE
        SELECT * INTO p FROM ${S}.rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, 1);
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
    SELECT * INTO r FROM ${S}.rl_decision(algos[i], st, lims[i], ws[i], caps[i], now_ms, costs[i]);
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
      SELECT * INTO r FROM ${S}.rl_decision(algos[i], original[i], lims[i], ws[i], caps[i], now_ms, 0);
      res := res || ARRAY[1, r.remaining, r.reset_ms, 0]::bigint[];
    ELSE
      res := res || results[(i - 1) * 4 + 1:(i - 1) * 4 + 4];
    END IF;
  END LOOP;
  RETURN res;
END $fn$;
`;
