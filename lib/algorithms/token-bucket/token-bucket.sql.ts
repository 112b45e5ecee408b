/**
 * PL/pgSQL twin of token-bucket.ts. State string: "<tokens scaled by window_ms>:<time in ms they were counted at>".
 */
export const tokenBucketSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_tb_refill(st text, full_units bigint, lim bigint, now_ms bigint,
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

CREATE OR REPLACE FUNCTION ${S}.rl_tb_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  r record;
  -- a cost beyond the capacity never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > cap THEN 0 ELSE cost * w END;
BEGIN
  r := ${S}.rl_tb_refill(st, full_units, lim, now_ms);
  IF cost > cap OR need > r.tokens THEN
    new_st := st; allowed := 0; remaining := r.tokens / w; reset_ms := ${S}.rl_ceil_div(full_units - r.tokens, lim);
    retry_ms := CASE WHEN cost > cap THEN -1 ELSE ${S}.rl_ceil_div(need - r.tokens, lim) END;
    RETURN;
  END IF;
  new_st := CASE WHEN r.tokens - need < full_units THEN (r.tokens - need) || ':' || r.at_ms END;
  allowed := 1; remaining := (r.tokens - need) / w;
  reset_ms := ${S}.rl_ceil_div(full_units - r.tokens + need, lim); retry_ms := 0;
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_tb_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  full_units bigint := cap * w;
  r record;
  nxt bigint;
BEGIN
  r := ${S}.rl_tb_refill(st, full_units, lim, now_ms);
  nxt := CASE WHEN amount >= cap THEN full_units ELSE least(full_units, r.tokens + amount * w) END;
  RETURN CASE WHEN nxt < full_units THEN nxt || ':' || r.at_ms END;
END $fn$;
`;
