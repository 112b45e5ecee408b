import { NEVER_FITS, SQL_DECISION } from '../algorithm.js';
import { ALGORITHM_CODES } from '../index.js';
import { MAX_LEAD_US } from '../../policy/emission.js';
import { DEBT_CAP_CAPACITIES } from '../../policy/max-wait.js';

const { gcra: GCRA, 'gcra-per-plan': GCRA_PER_PLAN } = ALGORITHM_CODES;

/** Both GCRA kernels' codes, for the dispatchers' filters. */
export const GCRA_CODES = [GCRA, GCRA_PER_PLAN] as const;

/**
 * SQL twin of gcra.ts, for both its kernels (`plan`: the per-plan one). State string: the TAT in µs since the
 * epoch, "<tat>"; per plan "<tat>/<limit it was written with>". A state of the previous twins (the token
 * bucket's, which decided GCRA before: "<taken>@<at>@<limit>", "<taken>@<at>", or 0.1.0's "<TAT ms>:<rest>")
 * is read by rl_bucket_taken as units taken at a time and the limit they drain at, and stands for the TAT
 * `at × 1000 + ceil(taken × 1000 / limit)`, written with that limit; it is kept as it was while nothing is
 * written. Products that could leave bigint are computed in numeric: (burst − cost) × the written interval,
 * and the conversion of a lead to another interval (rl_mul_div_ceil, exact).
 */
export const gcraSql = (S: string): string => `
-- ceil(a × b / c) for a, b >= 0, c >= 1, exactly (a × b may leave bigint; the result may not)
CREATE OR REPLACE FUNCTION ${S}.rl_mul_div_ceil(a bigint, b bigint, c bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (div(x.p, c) + CASE WHEN mod(x.p, c) > 0 THEN 1 ELSE 0 END)::bigint FROM (SELECT a::numeric * b AS p) x
$fn$;

-- How a key stands at now_ms: its lead over now in µs (0: none or behind), the interval of the limit it was
-- written with, this limit's interval, the burst (bounded so that burst × interval <= ${MAX_LEAD_US}), and whether
-- the state carries its limit (a new state keeps it: per plan, or a static policy of the same name)
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_standing(st text, lim bigint, w bigint, cap bigint, now_ms bigint)
RETURNS TABLE (lead bigint, tw bigint, t bigint, burst bigint, planned boolean, lim_w bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT greatest(0, s.tat - now_ms * 1000),
    CASE WHEN s.lim_w IS NULL OR s.lim_w = lim THEN p.t ELSE ${S}.rl_ceil_div(1000 * w, s.lim_w) END,
    p.t, least(cap, ${MAX_LEAD_US} / p.t), coalesce(s.kind = 2, false), coalesce(s.lim_w, lim)
  FROM (SELECT ${S}.rl_ceil_div(1000 * w, lim) AS t OFFSET 0) p,
    LATERAL (SELECT CASE k.kind WHEN 1 THEN st::bigint WHEN 2 THEN split_part(st, '/', 1)::bigint
          WHEN 3 THEN b.at_ms * 1000 + ${S}.rl_mul_div_ceil(b.taken, 1000, b.rate) END AS tat,
        CASE k.kind WHEN 2 THEN split_part(st, '/', 2)::bigint WHEN 3 THEN b.rate END AS lim_w, k.kind
      -- 1: a TAT; 2: a TAT and its limit; 3: the previous twins' state; NULL: none
      FROM (SELECT CASE WHEN st IS NULL OR st = '' THEN NULL WHEN st ~ '^-?[0-9]+$' THEN 1
          WHEN st ~ '^-?[0-9]+/[1-9][0-9]*$' THEN 2 ELSE 3 END AS kind OFFSET 0) k
        LEFT JOIN LATERAL ${S}.rl_bucket_taken(st, ${GCRA}, lim, w, cap, now_ms) b ON k.kind = 3
      OFFSET 0) s
$fn$;

-- a consume of nothing (cost 0) writes nothing: the state it reports is the one it was given
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_decision(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, cost bigint) RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok OR cost = 0 THEN st
      ELSE (now_ms * 1000 + v.nxt)::text || CASE WHEN plan OR (v.planned AND v.lead > 0) THEN '/' || lim::text ELSE '' END END,
    v.ok::int,
    CASE WHEN v.ok AND cost > 0 THEN v.burst - ${S}.rl_ceil_div(v.nxt, v.t) ELSE v.rem END,
    CASE WHEN v.ok AND cost > 0 THEN ${S}.rl_ceil_div(v.nxt, 1000) ELSE ${S}.rl_ceil_div(v.lead, 1000) END,
    CASE WHEN v.ok THEN 0 WHEN cost > v.burst THEN ${NEVER_FITS}
      ELSE ${S}.rl_ceil_div((v.lead - v.room)::bigint, 1000) END,
    v.rem,
    ${S}.rl_ceil_div(v.lead, 1000)
  FROM (SELECT r.*, CASE WHEN r.ok AND cost > 0 THEN
        CASE WHEN r.t = r.tw THEN r.lead ELSE ${S}.rl_mul_div_ceil(r.lead, r.t, r.tw) END + cost * r.t END AS nxt
    FROM (SELECT g.*, greatest(0, g.burst - ${S}.rl_ceil_div(g.lead, g.tw)) AS rem, q.room,
        cost <= g.burst AND g.lead <= q.room AS ok
      FROM ${S}.rl_gcra_standing(st, lim, w, cap, now_ms) g,
        LATERAL (SELECT CASE WHEN cost <= g.burst THEN (g.burst - cost)::numeric * g.tw END AS room) q
      OFFSET 0) r OFFSET 0) v
$fn$;

-- in the time of the limit the state was written with, which it keeps
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_refunded(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.back < r.lead THEN (now_ms * 1000 + r.lead - r.back::bigint)::text
      || CASE WHEN plan OR r.planned THEN '/' || r.lim_w::text ELSE '' END END
  FROM (SELECT g.lead, g.planned, g.lim_w, amount::numeric * g.tw AS back
    FROM ${S}.rl_gcra_standing(st, lim, w, cap, now_ms) g OFFSET 0) r
$fn$;

-- past the burst (a debt), the lead clamped at the debt cap (maxLeadUs in gcra.ts: a key already past it keeps
-- it); a key still counting in the time of the limit it was written with, which it keeps, a lapsed one at this
-- limit (amount × interval is computed only below the bound)
CREATE OR REPLACE FUNCTION ${S}.rl_gcra_charged(st text, plan boolean, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (now_ms * 1000 + CASE WHEN amount > (c.most - c.lead) / c.tw THEN c.most ELSE c.lead + amount * c.tw END)::text
      || CASE WHEN plan OR (c.planned AND c.lead > 0) THEN '/' || c.lim_w::text ELSE '' END
  FROM (SELECT g.lead, g.planned, CASE WHEN g.lead > 0 THEN g.tw ELSE g.t END AS tw,
      CASE WHEN g.lead > 0 THEN g.lim_w ELSE lim END AS lim_w,
      greatest(g.lead, least(${MAX_LEAD_US}, ${1 + DEBT_CAP_CAPACITIES} * g.burst * g.t)) AS most
    FROM ${S}.rl_gcra_standing(st, lim, w, cap, now_ms) g OFFSET 0) c
$fn$;
`;
