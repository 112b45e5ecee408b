/**
 * PL/pgSQL twin of sliding-window-counter.ts. State string: "<window index>:<current>:<previous>".
 */
export const slidingWindowCounterSql = (S: string): string => `
-- The window a key counts in: this instance's, or the later one the key holds (a clock ahead wrote it).
CREATE OR REPLACE FUNCTION ${S}.rl_swc_newest(st text, idx bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint > idx
    THEN split_part(st, ':', 1)::bigint ELSE idx END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swc_normalize(st text, idx bigint, OUT cur bigint, OUT prev bigint)
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

CREATE OR REPLACE FUNCTION ${S}.rl_swc_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := ${S}.rl_swc_newest(st, now_ms / w);
  at_ms bigint := greatest(now_ms, ${S}.rl_swc_newest(st, now_ms / w) * w);
  elapsed bigint := at_ms - idx * w;
  n record;
  used bigint;
  capacity bigint := lim * w;
  nxt bigint;
  -- a cost beyond the limit never fits (and cost × w could leave bigint)
  need bigint := CASE WHEN cost > lim THEN 0 ELSE cost * w END;
BEGIN
  n := ${S}.rl_swc_normalize(st, idx);
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

CREATE OR REPLACE FUNCTION ${S}.rl_swc_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := ${S}.rl_swc_newest(st, now_ms / w);
  n record;
  from_cur bigint;
  nc bigint;
  np bigint;
BEGIN
  n := ${S}.rl_swc_normalize(st, idx);
  from_cur := least(n.cur, amount);
  np := greatest(0, n.prev - (amount - from_cur));
  nc := n.cur - from_cur;
  RETURN CASE WHEN nc > 0 OR np > 0 THEN idx || ':' || nc || ':' || np END;
END $fn$;
`;
