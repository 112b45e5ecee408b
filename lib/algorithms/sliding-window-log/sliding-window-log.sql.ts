import { MAX_CHARGED_UNITS, NEVER_FITS } from '../algorithm.js';

/**
 * PL/pgSQL twin of sliding-window-log.ts. State string: "<time ms>:<cost>,<time ms>:<cost>,..." oldest first.
 * PL/pgSQL rather than inlined SQL like the other twins: a log needs a loop, and as SQL (window functions over
 * the entries) it would add sorts and aggregates to every statement that can decide a log, whether or not it
 * does, and set them up at each execution.
 */
export const slidingWindowLogSql = (S: string): string => `
-- The key's time: now, or its newest (last) entry's when that is later.
CREATE OR REPLACE FUNCTION ${S}.rl_swl_key_time(st text, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN split_part(st, ',', -1) ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(now_ms, split_part(split_part(st, ',', -1), ':', 1)::bigint) ELSE now_ms END
$fn$;

-- The entries alive at the key's time (at_ms, rl_swl_key_time), oldest first, and the units they hold.
CREATE OR REPLACE FUNCTION ${S}.rl_swl_live(st text, w bigint, now_ms bigint, OUT at_ms bigint, OUT times bigint[],
  OUT costs bigint[], OUT used bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  entry text;
  n int := 0;
BEGIN
  at_ms := ${S}.rl_swl_key_time(st, now_ms); times := '{}'; costs := '{}'; used := 0;
  FOREACH entry IN ARRAY coalesce(string_to_array(st, ','), '{}') LOOP
    IF entry ~ '^-?[0-9]+:[0-9]+$' AND split_part(entry, ':', 1)::bigint + w > at_ms THEN
      n := n + 1; times[n] := split_part(entry, ':', 1)::bigint; costs[n] := split_part(entry, ':', 2)::bigint;
      used := used + costs[n];
    END IF;
  END LOOP;
END $fn$;

-- The state string of entries (NULL when there are none); with only_used, of those whose cost is above 0.
CREATE OR REPLACE FUNCTION ${S}.rl_swl_join(times bigint[], costs bigint[], only_used boolean) RETURNS text
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
CREATE OR REPLACE FUNCTION ${S}.rl_swl_added(times bigint[], costs bigint[], at_ms bigint, amount bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  n int := cardinality(times);
BEGIN
  IF amount > 0 AND n > 0 AND times[n] = at_ms THEN
    costs[n] := costs[n] + amount;
  ELSIF amount > 0 THEN
    times[n + 1] := at_ms; costs[n + 1] := amount;
  END IF;
  RETURN ${S}.rl_swl_join(times, costs, false);
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swl_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint,
  OUT remaining_now bigint, OUT reset_now bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := ${S}.rl_swl_live(st, w, now_ms);
  n int := cardinality(live.times);
  freed bigint := 0;
BEGIN
  remaining_now := greatest(0, lim - live.used);
  reset_now := CASE WHEN n = 0 THEN 0 ELSE live.times[n] + w - now_ms END;
  IF cost <= lim AND live.used + cost <= lim THEN
    new_st := ${S}.rl_swl_added(live.times, live.costs, live.at_ms, cost); allowed := 1;
    remaining := lim - live.used - cost; retry_ms := 0;
    -- the newest entry is the one at the key's time when the consume logged one
    reset_ms := CASE WHEN cost > 0 THEN live.at_ms + w - now_ms ELSE reset_now END;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := remaining_now; reset_ms := reset_now; retry_ms := ${NEVER_FITS};
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
CREATE OR REPLACE FUNCTION ${S}.rl_swl_refunded_from(st text, w bigint, now_ms bigint, amount bigint,
  oldest_first boolean) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := ${S}.rl_swl_live(st, w, now_ms);
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
  RETURN ${S}.rl_swl_join(live.times, costs, true);
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swl_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$ SELECT ${S}.rl_swl_refunded_from(st, w, now_ms, amount, false) $fn$;

-- logs an entry of amount at the key's time, past the limit (the live units up to ${MAX_CHARGED_UNITS})
CREATE OR REPLACE FUNCTION ${S}.rl_swl_charged(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT ${S}.rl_swl_added(l.times, l.costs, l.at_ms, least(amount, greatest(0, ${MAX_CHARGED_UNITS} - l.used)))
  FROM ${S}.rl_swl_live(st, w, now_ms) l
$fn$;
`;
