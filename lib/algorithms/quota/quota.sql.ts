import { SQL_DECISION } from '../algorithm.js';

/**
 * SQL twin of quota.ts: the period counter with the period's start as its key. Its state is a row of the
 * durable table rate_limit_quota_usage (key, period), presented as "<period start ms>:<used>"; the caller
 * reads the key's newest period that is not older than this instance's and passes its edges, start_ms and
 * end_ms, in ms since the epoch (a clock ahead may have begun the next period, which then counts).
 */
export const quotaSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_quota_decision(st text, lim bigint, start_ms bigint, end_ms bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_decision(st, start_ms, end_ms - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_quota_refunded(st text, start_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_refunded(st, start_ms, amount)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_quota_charged(st text, start_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_charged(st, start_ms, amount)
$fn$;
`;
