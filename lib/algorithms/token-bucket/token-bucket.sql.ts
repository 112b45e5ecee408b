import { NEVER_FITS, SQL_DECISION } from '../algorithm.js';
import { ALGORITHM_CODES } from '../index.js';
import { MAX_TAKEN } from './token-bucket.js';
import { DEBT_CAP_CAPACITIES } from '../../policy/max-wait.js';

const { 'token-bucket': TB, gcra: GCRA } = ALGORITHM_CODES;

/**
 * SQL twin of token-bucket.ts (and, before GCRA had twins of its own, of gcra.ts: gcra.sql.ts reads the states
 * it wrote for GCRA keys through rl_bucket_taken). State string:
 * "<units taken, scaled by window_ms>@<time in ms they were counted at>@<limit they were written with>"; the
 * units drain at that limit until the next write. States of earlier twins are converted where they are read:
 * "<taken>@<at>" (without its limit) drains at the current limit; the token bucket's "<tokens left,
 * scaled>:<at ms>" and GCRA's "<TAT ms>:<remainder in 1/limit ms>" are read by the algorithm that wrote them
 * (`algo`, its code): a bucket's units taken are what its capacity lacked, capacity × window_ms − tokens,
 * counted at its time; a GCRA's are how far its TAT was ahead, (TAT − now) × limit + remainder, counted now.
 * Either is what the earlier twin would have decided with.
 * Products that could leave bigint are not computed: a cost beyond the capacity never fits, an elapsed time
 * that gives everything back gives everything back, a refund larger than what was taken empties the key.
 */
export const tokenBucketSql = (S: string): string => `
-- units taken at now_ms, the time they are counted at and the rate they drain at until the next write; a
-- clock that steps back gives nothing back
CREATE OR REPLACE FUNCTION ${S}.rl_bucket_taken(st text, algo int, lim bigint, w bigint, cap bigint, now_ms bigint)
RETURNS TABLE (taken bigint, at_ms bigint, rate bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN d.t IS NULL THEN 0 WHEN now_ms - d.a <= 0 THEN d.t
      WHEN now_ms - d.a >= d.t / d.r + 1 THEN 0 ELSE d.t - (now_ms - d.a) * d.r END,
    CASE WHEN d.t IS NOT NULL AND now_ms - d.a <= 0 THEN d.a ELSE now_ms END,
    d.r
  FROM (SELECT CASE r.kind WHEN 0 THEN r.v[1] WHEN 1 THEN r.v[1] WHEN 4 THEN greatest(0, cap * w - r.v[1])
        WHEN 5 THEN greatest(0, (r.v[1] - now_ms) * lim + r.v[2]) END AS t,
      CASE WHEN r.kind = 5 THEN now_ms ELSE r.v[2] END AS a,
      CASE WHEN r.kind = 1 THEN r.v[3] ELSE lim END AS r
    FROM (SELECT k.kind,
        CASE WHEN k.kind IS NOT NULL THEN string_to_array(st, CASE WHEN k.kind <= 1 THEN '@' ELSE ':' END)::bigint[] END AS v
      -- 1: this twin's state; 0: the previous twin's (no limit); 4, 5: the earlier token bucket's, GCRA's; NULL: none
      FROM (SELECT CASE WHEN st ~ '^[0-9]+@-?[0-9]+@[1-9][0-9]*$' THEN 1 WHEN st ~ '^[0-9]+@-?[0-9]+$' THEN 0
          WHEN algo = ${TB} AND st ~ '^[0-9]+:-?[0-9]+$' THEN 4 WHEN algo = ${GCRA} AND st ~ '^-?[0-9]+:[0-9]+$' THEN 5
        END AS kind OFFSET 0) k OFFSET 0) r OFFSET 0) d
$fn$;

-- a consume of nothing (cost 0) writes nothing: the state it reports is the one it was given
CREATE OR REPLACE FUNCTION ${S}.rl_bucket_decision(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, cost bigint) RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok OR cost = 0 THEN st ELSE v.nxt::text || '@' || v.at_ms::text || '@' || lim::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.full_units - v.nxt) / w ELSE greatest(0, v.full_units - v.taken) / w END,
    CASE WHEN v.ok AND cost > 0 THEN ${S}.rl_ceil_div(v.nxt, lim) ELSE ${S}.rl_ceil_div(v.taken, v.rate) END,
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN ${NEVER_FITS} ELSE ${S}.rl_ceil_div(v.nxt - v.full_units, v.rate) END,
    greatest(0, v.full_units - v.taken) / w,
    ${S}.rl_ceil_div(v.taken, v.rate)
  FROM (SELECT b.taken, b.at_ms, b.rate, f.full_units, b.taken + f.need AS nxt,
      cost <= cap AND b.taken + f.need <= f.full_units AS ok
    FROM (SELECT cap * w AS full_units, CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) f,
      LATERAL ${S}.rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_bucket_refunded(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.nxt > 0 THEN r.nxt::text || '@' || r.at_ms::text || '@' || lim::text END
  FROM (SELECT b.at_ms, CASE WHEN amount > b.taken / w THEN 0 ELSE b.taken - amount * w END AS nxt
    FROM ${S}.rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) r
$fn$;

-- taken may pass the capacity (a debt), up to the debt cap (maxTaken in token-bucket.ts: a key already past it
-- keeps what it owes); amount × w is not computed where it could leave bigint
CREATE OR REPLACE FUNCTION ${S}.rl_bucket_charged(st text, algo int, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN r.nxt > 0 THEN r.nxt::text || '@' || r.at_ms::text || '@' || lim::text END
  FROM (SELECT m.at_ms, CASE WHEN amount > (m.most - m.taken) / w THEN m.most ELSE m.taken + amount * w END AS nxt
    FROM (SELECT b.at_ms, b.taken, greatest(b.taken, least(${MAX_TAKEN}, ${1 + DEBT_CAP_CAPACITIES} * cap * w)) AS most
      FROM ${S}.rl_bucket_taken(st, algo, lim, w, cap, now_ms) b OFFSET 0) m OFFSET 0) r
$fn$;
`;
