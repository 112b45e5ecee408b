import { SQL_DECISION } from '../algorithm.js';

/**
 * SQL twin of gcra.ts. State string: "<TAT whole ms>:<remainder in 1/limit ms>", as in the Lua twin. `ahead`
 * is (TAT − now)·limit, in the token bucket's scaled units; a cost beyond the capacity never fits, and is
 * not multiplied (cost × w could leave bigint).
 */
export const gcraSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_ahead(st text, lim bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$'
    THEN greatest(0, (split_part(st, ':', 1)::bigint - now_ms) * lim + split_part(st, ':', 2)::bigint) ELSE 0 END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_gcra_decision(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint)
RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st WHEN v.nxt > 0 THEN (now_ms + v.nxt / lim)::text || ':' || (v.nxt % lim)::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.full_units - v.nxt) / w ELSE greatest(0, v.full_units - v.ahead) / w END,
    ${S}.rl_ceil_div(CASE WHEN v.ok THEN v.nxt ELSE v.ahead END, lim),
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN -1 ELSE ${S}.rl_ceil_div(v.nxt - v.full_units, lim) END,
    greatest(0, v.full_units - v.ahead) / w,
    ${S}.rl_ceil_div(v.ahead, lim)
  FROM (SELECT a.ahead, a.full_units, a.ahead + a.need AS nxt, cost <= cap AND a.ahead + a.need <= a.full_units AS ok
    FROM (SELECT ${S}.rl_gcra_ahead(st, lim, now_ms) AS ahead, cap * w AS full_units,
      CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) a OFFSET 0) v
$fn$;

-- amount × w is computed only when it is at most what is ahead (a larger amount empties the key)
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_refunded(st text, lim bigint, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.ahead > 0 THEN (now_ms + r.ahead / lim)::text || ':' || (r.ahead % lim)::text END
  FROM (SELECT CASE WHEN amount > a.ahead / w THEN 0 ELSE a.ahead - amount * w END AS ahead
    FROM (SELECT ${S}.rl_gcra_ahead(st, lim, now_ms) AS ahead OFFSET 0) a OFFSET 0) r
$fn$;
`;
