import { MAX_CHARGED_UNITS, NEVER_FITS, SQL_DECISION } from '../algorithm.js';

/**
 * SQL twin of sliding-window-counter.ts. State string: "<window index>:<current>:<previous>". rl_swc_window
 * gives the window a key counts in (this instance's, or the later one the key holds: a clock ahead wrote it),
 * the key's time and the two counts; a cost beyond the limit never fits, and is not multiplied (cost × w could
 * leave bigint).
 */
export const slidingWindowCounterSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_swc_window(st text, w bigint, now_ms bigint)
RETURNS TABLE (idx bigint, at_ms bigint, cur bigint, prev bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT n.idx, greatest(now_ms, n.idx * w),
    CASE WHEN n.sw = n.idx THEN n.sc ELSE 0 END,
    CASE WHEN n.sw = n.idx THEN n.sp WHEN n.sw = n.idx - 1 THEN n.sc ELSE 0 END
  FROM (SELECT d.sw, d.sc, d.sp, CASE WHEN d.sw > now_ms / w THEN d.sw ELSE now_ms / w END AS idx
    FROM (SELECT r.v[1] AS sw, r.v[2] AS sc, r.v[3] AS sp
      FROM (SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+:[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r
      OFFSET 0) d OFFSET 0) n
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swc_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st
      WHEN v.cur + cost > 0 OR v.prev > 0 THEN v.idx::text || ':' || (v.cur + cost)::text || ':' || v.prev::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (lim * w - v.used - v.need) / w ELSE greatest(0, lim * w - v.used) / w END,
    CASE WHEN CASE WHEN v.ok THEN v.cur + cost ELSE v.cur END > 0 THEN (v.idx + 2) * w - now_ms
      WHEN v.prev > 0 THEN (v.idx + 1) * w - now_ms ELSE 0 END,
    CASE WHEN v.ok THEN 0 WHEN cost > lim THEN ${NEVER_FITS}
      -- fits later in this window, once the previous window's weight has decayed enough (prev > 0 here)
      WHEN v.cur + cost <= lim THEN w - ((lim - v.cur - cost) * w) / v.prev - (v.at_ms - v.idx * w) + (v.at_ms - now_ms)
      -- only in the next window, where this window's count becomes the decaying one (cur > 0 here)
      ELSE (v.idx + 1) * w + greatest(0, w - ((lim - cost) * w) / v.cur) - now_ms END,
    greatest(0, lim * w - v.used) / w,
    CASE WHEN v.cur > 0 THEN (v.idx + 2) * w - now_ms WHEN v.prev > 0 THEN (v.idx + 1) * w - now_ms ELSE 0 END
  FROM (SELECT k.*, u.used, u.need, cost <= lim AND u.used + u.need <= lim * w AS ok
    FROM ${S}.rl_swc_window(st, w, now_ms) k,
      LATERAL (SELECT k.cur * w + k.prev * (w - (k.at_ms - k.idx * w)) AS used,
        CASE WHEN cost > lim THEN 0 ELSE cost * w END AS need OFFSET 0) u OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_swc_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.nc > 0 OR n.np > 0 THEN n.idx::text || ':' || n.nc::text || ':' || n.np::text END
  FROM (SELECT k.idx, k.cur - least(k.cur, amount) AS nc, greatest(0, k.prev - (amount - least(k.cur, amount))) AS np
    FROM ${S}.rl_swc_window(st, w, now_ms) k OFFSET 0) n
$fn$;

-- counted past the limit, up to ${MAX_CHARGED_UNITS} / w in the window
CREATE OR REPLACE FUNCTION ${S}.rl_swc_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.nc > 0 OR n.prev > 0 THEN n.idx::text || ':' || n.nc::text || ':' || n.prev::text END
  FROM (SELECT k.idx, k.prev, CASE WHEN amount > ${MAX_CHARGED_UNITS} / w - k.cur THEN greatest(k.cur, ${MAX_CHARGED_UNITS} / w)
      ELSE k.cur + amount END AS nc
    FROM ${S}.rl_swc_window(st, w, now_ms) k OFFSET 0) n
$fn$;
`;
