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
 * rl_algo_<kind>: the key's state once `amount` units are given back ('refunded') or taken without deciding
 * ('charged'), by the item's twin. A concurrency limit cannot be charged: rate_limit refuses it before.
 */
const stateUpdateSql = (S: string, kind: 'refunded' | 'charged'): string => {
  const branches: [select: string, kernels: AlgorithmKernel[]][] = [
    [`SELECT * FROM ${S}.rl_fw_${kind}(st, w, now_ms, amount)`, ['fixed-window']],
    [`SELECT ${S}.rl_swl_${kind}(st, w, now_ms, amount)`, ['sliding-window-log']],
    [`SELECT * FROM ${S}.rl_swc_${kind}(st, w, now_ms, amount)`, ['sliding-window-counter']],
    [`SELECT * FROM ${S}.rl_bucket_${kind}(st, algo, lim, w, cap, now_ms, amount)`, ['token-bucket']],
    [
      `SELECT * FROM ${S}.rl_gcra_${kind}(st, algo = ${GCRA_CODES[1]}, lim, w, cap, now_ms, amount)`,
      ['gcra', 'gcra-per-plan'],
    ],
    [`SELECT * FROM ${S}.rl_quota_${kind}(st, w, amount)`, ['quota']],
    ...(kind === 'refunded'
      ? [[`SELECT ${S}.rl_conc_refunded(st, w, now_ms, amount)`, ['concurrency']] as [string, AlgorithmKernel[]]]
      : []),
    [`SELECT * FROM ${S}.rl_fwf_${kind}(st, w, now_ms, amount)`, ['fixed-window-first-request']],
  ];
  return `CREATE OR REPLACE FUNCTION ${S}.rl_algo_${kind}(algo int, st text, lim bigint, w bigint, cap bigint,
  now_ms bigint, amount bigint) RETURNS TABLE (new_st text)
LANGUAGE sql IMMUTABLE AS $fn$
  ${branches.map(([select, kernels]) => `${select} WHERE ${algoIs(...kernels)}`).join('\n  UNION ALL ')}
$fn$;
`;
};

/**
 * The algorithms' SQL twins chosen by their code (ALGORITHM_CODES), as one table function each for a decision,
 * a refund and a charge (stateUpdateSql). Each is inlined into the statements that call it: each branch carries a one-time filter on
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

${stateUpdateSql(S, 'refunded')}
${stateUpdateSql(S, 'charged')}`;
