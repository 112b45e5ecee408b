import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { type ConsumeStatement, consumeStatementSql } from './consume-statement.sql.js';

const CODES = Object.values(ALGORITHM_CODES);

/** The consume statement chosen by p_algo (its code, else the one for mixed algorithms). */
const byAlgorithm = (S: string, statement: Omit<ConsumeStatement, 'algo'>): string => `      CASE p_algo
${CODES.map((code) => `      WHEN ${code} THEN${consumeStatementSql(S, { ...statement, algo: code })}`).join('\n')}
      ELSE${consumeStatementSql(S, { ...statement, algo: null })}
      END CASE;`;

/** The items of round `rnd` of rate_limit_consume, from its arrays. */
const ROUND_ITEMS = `(SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it`;

/** The one item of rl_consume_item, from its arguments. */
const ONE_ITEM = `(SELECT 1::bigint AS i, 1 AS req, p_key AS k, p_algo AS a, p_lim AS lim, p_w AS w, p_cap AS cap,
              p_cost AS cost, p_now AS now_ms, p_shadow AS sh, p_block AS bl) it`;

/**
 * rl_consume_item: a call of one item, as when the store is not busy: the rounds' consume statement for one
 * item, without the arrays to unnest, the round to filter, the loop of rounds nor the sort of the keys to lock.
 * Arguments as the items' of rate_limit_consume (p_shadow and p_block never NULL). It pays, a little: about
 * 100 against 120 µs of server time per call through a round (bench/RESULTS-postgres.md, "The single-item
 * path generated from the rounds' template").
 */
const consumeItemSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_consume_item(p_slack bigint, p_algo int, p_now bigint, p_key text, p_lim bigint,
  p_w bigint, p_cap bigint, p_cost bigint, p_shadow boolean, p_block bigint) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  reply text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
${byAlgorithm(S, { single: true, items: ONE_ITEM, into: 'reply' })}
  RETURN reply;
END $fn$;
`;

/**
 * rate_limit_consume: the consumes of several requests in one call (the store gathers the requests that
 * arrive while its statements are busy). Each request is decided as consumeAll decides it; requests are decided
 * in their order, in rounds: the store puts a request that shares a key with an earlier one in a later round,
 * and each round is one statement (consumeStatementSql); a call of one item is that statement for one item
 * (rl_consume_item). Every consume of the store comes here: one SQL path.
 *   p_slack     ms added to every row's expiry
 *   p_single    whether every request has one item
 *   p_algo      the code of every item's algorithm when they share one, else 0
 *   p_nows      per item, the time in ms since the epoch; NULL (the array) to take the database's clock
 *   p_rounds    per round, the number of its first request (1-based, increasing)
 *   p_reqs      per item, the number of its request (items of a request are consecutive)
 *   p_keys, p_algos, p_lims, p_ws, p_caps, p_costs: per item, as for rate_limit()
 *   p_shadows   per item, whether it is a shadow item; NULL (the array) when none is
 *   p_blocks    per item, the block in ms that a denial of it starts (0: none); NULL (the array) when none has
 *   p_repeated  whether a request holds a key more than once: its items on the key then decide one after the
 *               other (consumeStatementSql's `repeated`, for items of any algorithm; p_algo and p_single unused)
 * Returns "allowed,remaining,reset_ms,retry_ms" per item (allowed 2: denied and blocked), joined by commas, in
 * item order.
 * Per-key transaction-level advisory locks, taken in key order (as every version takes them, so that the instances
 * of two versions cannot deadlock during a rolling deploy) before any key is read, make the call atomic under
 * concurrency; a statement of PL/pgSQL reads after the locks were granted. Each statement is planned once per
 * connection (a custom plan would expand every algorithm's SQL again at each call).
 */
export const consumeSql = (S: string): string => `${consumeItemSql(S)}
CREATE OR REPLACE FUNCTION ${S}.rate_limit_consume(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[], p_shadows boolean[], p_blocks bigint[], p_repeated boolean) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  db_now bigint;
  reply text;
  part text;
BEGIN
  IF p_nows IS NULL THEN
    db_now := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  END IF;
  IF cardinality(p_keys) = 1 THEN
    RETURN ${S}.rl_consume_item(p_slack, p_algo, coalesce(p_nows[1], db_now), p_keys[1], p_lims[1], p_ws[1],
      p_caps[1], p_costs[1], coalesce(p_shadows[1], false), coalesce(p_blocks[1], 0));
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(p_keys) AS u ORDER BY u;
  FOR rnd IN 1..cardinality(p_rounds) LOOP
    IF p_repeated THEN
${consumeStatementSql(S, { algo: null, single: false, repeated: true, items: ROUND_ITEMS, into: 'part' })}
    ELSIF p_single THEN
${byAlgorithm(S, { single: true, items: ROUND_ITEMS, into: 'part' })}
    ELSE
${byAlgorithm(S, { single: false, items: ROUND_ITEMS, into: 'part' })}
    END IF;
    reply := CASE WHEN reply IS NULL THEN part ELSE reply || ',' || part END;
  END LOOP;
  RETURN reply;
END $fn$;

`;
