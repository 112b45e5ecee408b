/**
 * PL/pgSQL twin of concurrency.ts: its decision is the sliding window log's (rl_swl_decision, on the log's
 * state string); its refund gives back the oldest slots first, where the log's gives back the newest.
 */
export const concurrencySql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_conc_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$ SELECT ${S}.rl_swl_refunded_from(st, w, now_ms, amount, true) $fn$;
`;
