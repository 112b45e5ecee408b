/**
 * PL/pgSQL twin of sliding-window-log.ts. State string: "<time ms>:<cost>,<time ms>:<cost>,..." oldest first.
 */
export const slidingWindowLogSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_swl_alive(st text, w bigint, now_ms bigint, OUT times bigint[], OUT costs bigint[])
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
CREATE OR REPLACE FUNCTION ${S}.rl_swl_key_time(st text, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '(^|,)-?[0-9]+:[0-9]+$'
    THEN greatest(now_ms, split_part(substring(st FROM '-?[0-9]+:[0-9]+$'), ':', 1)::bigint) ELSE now_ms END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swl_encode(times bigint[], costs bigint[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN coalesce(array_length(times, 1), 0) = 0 THEN NULL
    ELSE (SELECT string_agg(t || ':' || c, ',' ORDER BY i) FROM unnest(times, costs) WITH ORDINALITY AS e(t, c, i)) END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swl_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
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
  at_ms bigint := ${S}.rl_swl_key_time(st, now_ms);
BEGIN
  a := ${S}.rl_swl_alive(st, w, at_ms);
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
    new_st := ${S}.rl_swl_encode(times, costs); allowed := 1; remaining := lim - used - cost; retry_ms := 0;
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

CREATE OR REPLACE FUNCTION ${S}.rl_swl_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
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
  a := ${S}.rl_swl_alive(st, w, ${S}.rl_swl_key_time(st, now_ms));
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
  RETURN ${S}.rl_swl_encode(kept_t, kept_c);
END $fn$;
`;
