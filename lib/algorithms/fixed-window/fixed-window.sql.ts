import { SQL_DECISION } from '../algorithm.js';

/**
 * SQL twin of fixed-window.ts: the period counter with the window index as the period (or the later window
 * the key holds). Integer division truncates toward zero; times are positive, so it is floor here.
 */
export const fixedWindowSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_fw_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT d.* FROM (SELECT ${S}.rl_period_newest(st, now_ms / w) AS idx OFFSET 0) p,
    LATERAL ${S}.rl_period_decision(st, p.idx, (p.idx + 1) * w - now_ms, lim, cost) d
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fw_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_refunded(st, ${S}.rl_period_newest(st, now_ms / w), amount)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fw_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_charged(st, ${S}.rl_period_newest(st, now_ms / w), amount)
$fn$;

-- anchor 'first-request' (fixedWindowFromFirstRequest): the period is the window's start, in ms
CREATE OR REPLACE FUNCTION ${S}.rl_fwf_start(st text, w bigint, now_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN st ~ '^-?[0-9]+:[0-9]+$' AND split_part(st, ':', 1)::bigint + w > now_ms
    THEN split_part(st, ':', 1)::bigint ELSE now_ms END
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fwf_decision(st text, lim bigint, w bigint, now_ms bigint, cost bigint)
RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT d.* FROM (SELECT ${S}.rl_fwf_start(st, w, now_ms) AS start OFFSET 0) p,
    LATERAL ${S}.rl_period_decision(st, p.start, p.start + w - now_ms, lim, cost) d
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fwf_refunded(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_refunded(st, ${S}.rl_fwf_start(st, w, now_ms), amount)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fwf_charged(st text, w bigint, now_ms bigint, amount bigint)
RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_charged(st, ${S}.rl_fwf_start(st, w, now_ms), amount)
$fn$;
`;
