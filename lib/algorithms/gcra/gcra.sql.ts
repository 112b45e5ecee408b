/**
 * PL/pgSQL twin of gcra.ts. State string: "<TAT whole ms>:<remainder in 1/limit ms>", as in the Lua twin.
 */
export const gcraSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_ahead(st text, lim bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(0, (split_part(st, ':', 1)::bigint - now_ms) * lim + split_part(st, ':', 2)::bigint) ELSE 0 END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_gcra_at(ahead bigint, lim bigint, now_ms bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN ahead = 0 THEN NULL ELSE (now_ms + ahead / lim) || ':' || (ahead - (ahead / lim) * lim) END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_gcra_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  ahead bigint := ${S}.rl_gcra_ahead(st, lim, now_ms);
  -- a cost beyond the capacity never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > cap THEN 0 ELSE cost * w END;
BEGIN
  IF cost > cap OR ahead + need > full_units THEN
    new_st := st; allowed := 0; remaining := greatest(0, full_units - ahead) / w;
    reset_ms := ${S}.rl_ceil_div(ahead, lim);
    retry_ms := CASE WHEN cost > cap THEN -1 ELSE ${S}.rl_ceil_div(ahead + need - full_units, lim) END;
    RETURN;
  END IF;
  new_st := ${S}.rl_gcra_at(ahead + need, lim, now_ms); allowed := 1;
  remaining := (full_units - ahead - need) / w; reset_ms := ${S}.rl_ceil_div(ahead + need, lim); retry_ms := 0;
END $fn$;

-- amount × w is computed only when it is at most what is ahead (a larger amount empties the key)
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT ${S}.rl_gcra_at(CASE WHEN amount > a.ahead / w THEN 0 ELSE a.ahead - amount * w END, lim, now_ms)
  FROM (SELECT ${S}.rl_gcra_ahead(st, lim, now_ms) AS ahead) a
$fn$;
`;
