/**
 * PL/pgSQL twin of concurrency.ts: its decision is the sliding window log's (rl_swl_decision, on the log's
 * state string); its refund gives back the oldest leases first, where the log's gives back the newest.
 */
export const concurrencySql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_conc_refunded(st text, w bigint, now_ms bigint, amount bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  live record := ${S}.rl_swl_live(st, w, ${S}.rl_swl_key_time(st, now_ms));
  costs bigint[] := live.costs;
  left_units bigint := amount;
  take bigint;
BEGIN
  FOR i IN 1..cardinality(costs) LOOP
    EXIT WHEN left_units <= 0;
    take := least(costs[i], left_units);
    costs[i] := costs[i] - take;
    left_units := left_units - take;
  END LOOP;
  RETURN ${S}.rl_swl_join(live.times, costs, true);
END $fn$;
`;
