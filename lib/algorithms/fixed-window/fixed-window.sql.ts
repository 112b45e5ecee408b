/**
 * PL/pgSQL twin of fixed-window.ts (and of its Lua twin: the same state string "<window index>:<count>").
 * `S` stands for the schema. Integer division of non-negative bigints is floor, as in the TypeScript.
 */
export const fixedWindowSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_fw_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := now_ms / w;
  cnt bigint := 0;
  wend bigint := (now_ms / w + 1) * w - now_ms;
BEGIN
  IF st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint = idx THEN cnt := split_part(st, ':', 2)::bigint; END IF;
  IF cost > lim THEN
    new_st := st; allowed := 0; remaining := greatest(0, lim - cnt);
    reset_ms := CASE WHEN cnt > 0 THEN wend ELSE 0 END; retry_ms := -1; RETURN;
  END IF;
  IF cnt + cost <= lim THEN
    IF cnt + cost = 0 THEN new_st := NULL; allowed := 1; remaining := lim; reset_ms := 0; retry_ms := 0; RETURN; END IF;
    new_st := idx || ':' || (cnt + cost); allowed := 1; remaining := lim - cnt - cost; reset_ms := wend; retry_ms := 0; RETURN;
  END IF;
  new_st := st; allowed := 0; remaining := greatest(0, lim - cnt); reset_ms := wend; retry_ms := wend;
END $fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fw_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  idx bigint := now_ms / w;
  cnt bigint;
BEGIN
  IF st IS NULL OR st !~ '^-?[0-9]+:[0-9]+$' OR split_part(st, ':', 1)::bigint <> idx THEN RETURN NULL; END IF;
  cnt := greatest(0, split_part(st, ':', 2)::bigint - amount);
  RETURN CASE WHEN cnt > 0 THEN idx || ':' || cnt END;
END $fn$;
`;
