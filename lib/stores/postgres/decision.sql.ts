import { SQL_DECISION } from '../../algorithms/algorithm.js';
import { ALGORITHM_CODES, type AlgorithmKernel } from '../../algorithms/index.js';
import { GCRA_CODES } from '../../algorithms/gcra/gcra.sql.js';

/** `algo = <code> OR ...`: the filter of a twin's branch, by the kernels it decides. */
const algoIs = (...kernels: AlgorithmKernel[]): string =>
  kernels.map((kernel) => `algo = ${ALGORITHM_CODES[kernel]}`).join(' OR ');

/** ceil(a / b) for integers a >= 0, b > 0, as ceilDiv in util/integer-math.ts; inlined where it is called. */
export const ceilDivSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_ceil_div(a bigint, b bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN (a / b) * b < a THEN a / b + 1 ELSE a / b END
$fn$;
`;

/**
 * The algorithms' SQL twins chosen by their code (ALGORITHM_CODES), as one table function each for a decision
 * and a refund. Both are inlined into the statements that call them: each branch carries a one-time filter on
 * the code, so only the item's own algorithm is computed.
 *   algo            ALGORITHM_CODES of the item's algorithm
 *   st              the key's state string, NULL when it has none (or it expired); '' (a key that holds only a
 *                   block) reads as none in every twin
 *   lim, w, cap     the policy's limit, window (ms) and capacity; a quota's period start and end (ms) in w, cap
 *   now_ms, cost    the time (ms since the epoch) and the units to consume (0: how the key stands)
 * A decision has the columns SQL_DECISION (algorithm.ts).
 */
export const decisionSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_algo_decision(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  cost bigint) RETURNS TABLE (${SQL_DECISION})
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_fw_decision(st, lim, w, now_ms, cost) WHERE ${algoIs('fixed-window')}
  UNION ALL SELECT (d.x).* FROM (SELECT ${S}.rl_swl_decision(st, lim, w, now_ms, cost) AS x OFFSET 0) d
    WHERE ${algoIs('sliding-window-log', 'concurrency')}
  UNION ALL SELECT * FROM ${S}.rl_swc_decision(st, lim, w, now_ms, cost) WHERE ${algoIs('sliding-window-counter')}
  UNION ALL SELECT * FROM ${S}.rl_bucket_decision(st, algo, lim, w, cap, now_ms, cost) WHERE ${algoIs('token-bucket')}
  UNION ALL SELECT * FROM ${S}.rl_gcra_decision(st, algo = ${GCRA_CODES[1]}, lim, w, cap, now_ms, cost)
    WHERE ${algoIs('gcra', 'gcra-per-plan')}
  UNION ALL SELECT * FROM ${S}.rl_quota_decision(st, lim, w, cap, now_ms, cost) WHERE ${algoIs('quota')}
  UNION ALL SELECT * FROM ${S}.rl_fwf_decision(st, lim, w, now_ms, cost) WHERE ${algoIs('fixed-window-first-request')}
$fn$;

CREATE OR REPLACE FUNCTION ${S}.rl_algo_refunded(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_fw_refunded(st, w, now_ms, amount) WHERE ${algoIs('fixed-window')}
  UNION ALL SELECT ${S}.rl_swl_refunded(st, w, now_ms, amount) WHERE ${algoIs('sliding-window-log')}
  UNION ALL SELECT * FROM ${S}.rl_swc_refunded(st, w, now_ms, amount) WHERE ${algoIs('sliding-window-counter')}
  UNION ALL SELECT * FROM ${S}.rl_bucket_refunded(st, algo, lim, w, cap, now_ms, amount) WHERE ${algoIs('token-bucket')}
  UNION ALL SELECT * FROM ${S}.rl_gcra_refunded(st, algo = ${GCRA_CODES[1]}, lim, w, cap, now_ms, amount)
    WHERE ${algoIs('gcra', 'gcra-per-plan')}
  UNION ALL SELECT * FROM ${S}.rl_quota_refunded(st, w, amount) WHERE ${algoIs('quota')}
  UNION ALL SELECT ${S}.rl_conc_refunded(st, w, now_ms, amount) WHERE ${algoIs('concurrency')}
  UNION ALL SELECT * FROM ${S}.rl_fwf_refunded(st, w, now_ms, amount) WHERE ${algoIs('fixed-window-first-request')}
$fn$;

-- a charge (rate_limit's 'charge'): no branch for concurrency, which cannot be charged and is refused before
CREATE OR REPLACE FUNCTION ${S}.rl_algo_charged(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT * FROM ${S}.rl_fw_charged(st, w, now_ms, amount) WHERE ${algoIs('fixed-window')}
  UNION ALL SELECT ${S}.rl_swl_charged(st, w, now_ms, amount) WHERE ${algoIs('sliding-window-log')}
  UNION ALL SELECT * FROM ${S}.rl_swc_charged(st, w, now_ms, amount) WHERE ${algoIs('sliding-window-counter')}
  UNION ALL SELECT * FROM ${S}.rl_bucket_charged(st, algo, lim, w, cap, now_ms, amount) WHERE ${algoIs('token-bucket')}
  UNION ALL SELECT * FROM ${S}.rl_gcra_charged(st, algo = ${GCRA_CODES[1]}, lim, w, cap, now_ms, amount)
    WHERE ${algoIs('gcra', 'gcra-per-plan')}
  UNION ALL SELECT * FROM ${S}.rl_quota_charged(st, w, amount) WHERE ${algoIs('quota')}
  UNION ALL SELECT * FROM ${S}.rl_fwf_charged(st, w, now_ms, amount) WHERE ${algoIs('fixed-window-first-request')}
$fn$;
`;
