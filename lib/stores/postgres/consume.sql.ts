import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { ALLOWED, DENIED, blockedReply, blockingReply, decisionReply, replyText } from './reply.sql.js';
import { roundSql } from './round.sql.js';

const QUOTA = ALGORITHM_CODES.quota;

/**
 * rl_consume_item_v4: a call of one item, as when the store is not busy: a few small statements (read, decide,
 * write) are set up faster than a round's. Arguments as the items' of rate_limit_consume_v4. The one fast path
 * beside the rounds, kept because it pays: one call at a time, 1 policy, 158 µs of server CPU per decision
 * against 198 µs through a round (bench/RESULTS-postgres.md, "The single-item path").
 */
const consumeItemSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_consume_item_v4(p_slack bigint, p_algo int, p_now bigint, p_key text, p_lim bigint,
  p_w bigint, p_cap bigint, p_cost bigint, p_shadow boolean, p_block bigint) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_st text;
  v_until bigint;
  v_w bigint;
  v_cap bigint;
  v_d record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
  SELECT l.st, l.until_ms, l.w_ms, l.cap_ms INTO v_st, v_until, v_w, v_cap
    FROM ${S}.rl_load_state(p_key, p_algo, p_w, p_cap, p_now) l;
  IF v_until > p_now THEN
    -- blocked: denied without a decision, and without extending the block
    RETURN ${replyText(blockedReply('v_until', 'p_now'))};
  END IF;
  CASE p_algo
${Object.values(ALGORITHM_CODES)
  .map(
    (code) =>
      `    WHEN ${code} THEN SELECT * INTO v_d FROM ${S}.rl_algo_decision_v4(${code}, v_st, p_lim, v_w, v_cap, p_now, p_cost);`,
  )
  .join('\n')}
  END CASE;
  IF v_d.allowed = ${ALLOWED} AND p_cost > 0 THEN
    IF p_algo = ${QUOTA} THEN
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      VALUES (p_key, v_w, v_cap, split_part(v_d.new_st, ':', 2)::bigint, p_lim)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = NULL;
    ELSE
      INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at) VALUES (p_key, v_d.new_st, p_now + v_d.reset_ms + p_slack)
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = NULL;
    END IF;
  ELSIF v_d.allowed = ${DENIED} AND p_block > 0 AND NOT p_shadow THEN
    -- the denial starts the policy's block, the state kept as it was
    PERFORM ${S}.rl_save_state(p_algo, p_key, v_st, v_d.reset_ms, p_slack, p_now, p_lim, v_w, v_cap, p_now + p_block);
    RETURN ${replyText(blockingReply('v_d', 'p_block'))};
  END IF;
  RETURN ${replyText(decisionReply('v_d'))};
END $fn$;
`;

/** The round's statement chosen by p_algo, for requests of one item (`single`) or not. */
function variants(S: string, single: boolean): string {
  const codes = Object.values(ALGORITHM_CODES);
  return `      CASE p_algo
${codes.map((code) => `      WHEN ${code} THEN${roundSql(S, code, single)}`).join('\n')}
      ELSE${roundSql(S, null, single)}
      END CASE;`;
}

/** rate_limit_consume_<version>, an earlier schema's entry point with this one's signature: a wrapper. */
const earlierEntryPoint = (
  S: string,
  version: string,
): string => `CREATE OR REPLACE FUNCTION ${S}.rate_limit_consume_${version}(
  p_slack bigint, p_single boolean, p_algo int, p_nows bigint[], p_rounds int[], p_reqs int[], p_keys text[],
  p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[], p_costs bigint[], p_shadows boolean[],
  p_blocks bigint[]) RETURNS text
LANGUAGE sql AS $fn$
  SELECT ${S}.rate_limit_consume_v4(p_slack, p_single, p_algo, p_nows, p_rounds, p_reqs, p_keys, p_algos, p_lims,
    p_ws, p_caps, p_costs, p_shadows, p_blocks)
$fn$;
`;

/**
 * rate_limit_consume_v4: the consumes of several requests in one call (the store gathers the requests that
 * arrive while its statements are busy). Each request is decided as consumeAll decides it; requests are decided
 * in their order, in rounds: the store puts a request that shares a key with an earlier one in a later round,
 * and each round is one statement (roundSql). A request with two items on one key goes to rate_limit_v4().
 *   p_slack     ms added to every row's expiry
 *   p_single    whether every request has one item
 *   p_algo      the code of every item's algorithm when they share one, else 0
 *   p_nows      per item, the time in ms since the epoch; NULL (the array) to take the database's clock
 *   p_rounds    per round, the number of its first request (1-based, increasing)
 *   p_reqs      per item, the number of its request (items of a request are consecutive)
 *   p_keys, p_algos, p_lims, p_ws, p_caps, p_costs: per item, as for rate_limit_v4()
 *   p_shadows   per item, whether it is a shadow item; NULL (the array) when none is
 *   p_blocks    per item, the block in ms that a denial of it starts (0: none); NULL (the array) when none has
 * Returns "allowed,remaining,reset_ms,retry_ms" per item (allowed 2: denied and blocked), joined by commas, in
 * item order.
 * Per-key transaction-level advisory locks, taken in key order (as 0.1.0 takes them, so that its instances and
 * these cannot deadlock during a rolling deploy) before any key is read, make the call atomic under
 * concurrency; a statement of PL/pgSQL reads after the locks were granted. Each statement is planned once per
 * connection (a custom plan would expand every algorithm's SQL again at each call).
 * rate_limit_consume_v3(...), rate_limit_consume_v2(...) and rate_limit_consume(...), the earlier schemas' entry
 * points (same signatures),
 * stay as its wrappers.
 */
export const consumeSql = (S: string): string => `${consumeItemSql(S)}
CREATE OR REPLACE FUNCTION ${S}.rate_limit_consume_v4(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[], p_shadows boolean[], p_blocks bigint[]) RETURNS text
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
    RETURN ${S}.rl_consume_item_v4(p_slack, p_algo, coalesce(p_nows[1], db_now), p_keys[1], p_lims[1], p_ws[1],
      p_caps[1], p_costs[1], coalesce(p_shadows[1], false), coalesce(p_blocks[1], 0));
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(u, 0)) FROM unnest(p_keys) AS u ORDER BY u;
  FOR rnd IN 1..cardinality(p_rounds) LOOP
    IF p_single THEN
${variants(S, true)}
    ELSE
${variants(S, false)}
    END IF;
    reply := CASE WHEN reply IS NULL THEN part ELSE reply || ',' || part END;
  END LOOP;
  RETURN reply;
END $fn$;

-- The entry points of the earlier schemas, for their instances during a rolling deploy.
${['v3', 'v2'].map((version) => earlierEntryPoint(S, version)).join('')}
CREATE OR REPLACE FUNCTION ${S}.rate_limit_consume(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[]) RETURNS text
LANGUAGE sql AS $fn$
  SELECT ${S}.rate_limit_consume_v4(p_slack, p_single, p_algo, p_nows, p_rounds, p_reqs, p_keys, p_algos, p_lims,
    p_ws, p_caps, p_costs, NULL, NULL)
$fn$;
`;
