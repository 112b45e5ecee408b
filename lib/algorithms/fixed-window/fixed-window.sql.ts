/**
 * PL/pgSQL twin of fixed-window.ts: the period counter with the window index as the period (or the later
 * window the key holds). Integer division truncates toward zero; times are positive, so it is floor here.
 */
export const fixedWindowSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_fw_step(st text, lim bigint, w bigint, cap bigint, now_ms bigint, cost bigint,
  OUT new_st text, OUT allowed int, OUT remaining bigint, OUT reset_ms bigint, OUT retry_ms bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_period_step(st, ${S}.rl_period_newest(st, now_ms / w),
    (${S}.rl_period_newest(st, now_ms / w) + 1) * w - now_ms, lim, cost)
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_fw_refund(st text, lim bigint, w bigint, cap bigint, now_ms bigint, amount bigint)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT ${S}.rl_period_refund(st, ${S}.rl_period_newest(st, now_ms / w), amount)
$fn$;
`;
