/**
 * PL/pgSQL twin of quota.ts. Its state is a row of the durable table rate_limit_quota_usage (key, period),
 * presented to the step as "<period start ms>:<used>" like the Lua twin's. w carries the period's start and
 * cap its end, in ms since the epoch.
 */
export const quotaSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_quota_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  used bigint := 0;
  period_end bigint := cap - now_ms;
BEGIN
  IF st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint = w THEN used := split_part(st, ':', 2)::bigint; END IF;
  IF cost > lim THEN
    new_st := st; allowed := 0; remaining := greatest(0, lim - used);
    reset_ms := CASE WHEN used > 0 THEN period_end ELSE 0 END; retry_ms := -1; RETURN;
  END IF;
  IF used + cost <= lim THEN
    IF used + cost = 0 THEN new_st := NULL; allowed := 1; remaining := lim; reset_ms := 0; retry_ms := 0; RETURN; END IF;
    new_st := w || ':' || (used + cost); allowed := 1; remaining := lim - used - cost; reset_ms := period_end; retry_ms := 0;
    RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := greatest(0, lim - used); reset_ms := period_end; retry_ms := period_end;
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_quota_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  used bigint;
BEGIN
  IF st IS NULL OR st !~ '^-?[0-9]+:[0-9]+$' OR split_part(st, ':', 1)::bigint <> w THEN RETURN NULL; END IF;
  used := greatest(0, split_part(st, ':', 2)::bigint - amount);
  RETURN CASE WHEN used > 0 THEN w || ':' || used END;
END $fn$;
`;
