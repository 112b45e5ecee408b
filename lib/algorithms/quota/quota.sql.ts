/**
 * PL/pgSQL twin of quota.ts: the period counter with the period's start as its key. Its state is a row of the
 * durable table rate_limit_quota_usage (key, period), presented as "<period start ms>:<used>"; w carries the
 * period's start and cap its end, in ms since the epoch.
 */
export const quotaSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_quota_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_step(st, w, cap - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_quota_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT ${S}.rl_period_refund(st, w, amount)
$fn$;
`;
