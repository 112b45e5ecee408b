import { SQL_DECISION } from '../algorithm.js';

/**
 * SQL twin of token-bucket.ts. State string: "<tokens scaled by window_ms>:<time in ms they were counted at>".
 * rl_tb_tokens gives the tokens at now_ms and the time they are counted at; a cost beyond the capacity never
 * fits, and is not multiplied (cost × w could leave bigint).
 */
export const tokenBucketSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_tb_tokens(st text, full_units bigint, lim bigint, now_ms bigint)
RETURNS TABLE (tokens bigint, at_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN d.t IS NULL THEN full_units WHEN now_ms - d.a <= 0 THEN least(full_units, d.t)
      -- least() before the product could overflow: elapsed beyond the time to fill up refills to full
      WHEN now_ms - d.a >= full_units / lim + 1 THEN full_units ELSE least(full_units, d.t + (now_ms - d.a) * lim) END,
    CASE WHEN d.t IS NOT NULL AND now_ms - d.a <= 0 THEN d.a ELSE now_ms END
  FROM (SELECT r.v[1] AS t, r.v[2] AS a
    FROM (SELECT CASE WHEN st ~ '^[0-9]+:-?[0-9]+$' THEN string_to_array(st, ':')::bigint[] END AS v OFFSET 0) r OFFSET 0) d
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_tb_decision(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint)
RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT
    CASE WHEN NOT v.ok THEN st WHEN v.tokens - v.need < v.full_units THEN (v.tokens - v.need)::text || ':' || v.at_ms::text END,
    v.ok::int,
    CASE WHEN v.ok THEN (v.tokens - v.need) / w ELSE v.tokens / w END,
    ${S}.rl_ceil_div(v.full_units - v.tokens + CASE WHEN v.ok THEN v.need ELSE 0 END, lim),
    CASE WHEN v.ok THEN 0 WHEN cost > cap THEN -1 ELSE ${S}.rl_ceil_div(v.need - v.tokens, lim) END,
    v.tokens / w,
    ${S}.rl_ceil_div(v.full_units - v.tokens, lim)
  FROM (SELECT r.tokens, r.at_ms, f.full_units, f.need, cost <= cap AND f.need <= r.tokens AS ok
    FROM (SELECT cap * w AS full_units, CASE WHEN cost > cap THEN 0 ELSE cost * w END AS need OFFSET 0) f,
      LATERAL ${S}.rl_tb_tokens(st, f.full_units, lim, now_ms) r OFFSET 0) v
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_tb_refunded(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN n.tokens < n.full_units THEN n.tokens::text || ':' || n.at_ms::text END
  FROM (SELECT f.full_units, r.at_ms,
      CASE WHEN amount >= cap THEN f.full_units ELSE least(f.full_units, r.tokens + amount * w) END AS tokens
    FROM (SELECT cap * w AS full_units OFFSET 0) f, LATERAL ${S}.rl_tb_tokens(st, f.full_units, lim, now_ms) r OFFSET 0) n
$fn$;
`;
