import { ALGORITHM_CODES } from '../../algorithms/index.js';

const QUOTA = ALGORITHM_CODES.quota;

/**
 * One round: a set-based statement that reads every key of the round's items (a key appears once in a round),
 * decides each item through the algorithms' inlined SQL twins, and writes what the requests allowed in full
 * consumed (a denied request writes nothing, and reports its other items as their keys stand). A statement is
 * set up at every execution, which costs more than deciding a few items: so there is one for each algorithm
 * (`algo`, its code; null when the items' algorithms differ), leaving out the other algorithms and the other
 * table, and one for rounds whose requests have one item each (`single`), without the window that tells
 * whether every item of a request is allowed.
 * An allowed consume of a cost above 0 always leaves a state to keep, with a positive reset: every item written
 * has one.
 */
function roundSql(S: string, algo: number | null, single: boolean): string {
  const mixed = algo === null;
  const rates = algo !== QUOTA; // the round may hold items of rate limits, in rate_limit_state
  const quotas = mixed || algo === QUOTA; // and of quotas, in rate_limit_quota_usage
  const isQuota = mixed ? `it.a = ${QUOTA}` : 'true';
  // a quota counts in the key's newest period: a clock ahead may have begun the next one
  const newer = 'q.period_start > it.w';
  const state = !quotas
    ? 's.state'
    : `CASE WHEN ${isQuota} THEN q.period_start::text || ':' || q.used::text${rates ? ' ELSE s.state' : ''} END`;
  const reads = [
    rates &&
      `LEFT JOIN ${S}.rate_limit_state s ON ${mixed ? `it.a <> ${QUOTA} AND ` : ''}s.key = it.k AND s.expires_at > it.now_ms`,
    quotas &&
      `LEFT JOIN LATERAL (SELECT u.period_start, u.used, u.period_end FROM ${S}.rate_limit_quota_usage u
          WHERE ${isQuota} AND u.key = it.k AND u.period_start >= it.w ORDER BY u.period_start DESC LIMIT 1) q ON true`,
  ];
  const writes = [
    rates &&
      `written AS (
      INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at)
      SELECT d.k, d.new_st, d.now_ms + d.reset_ms + p_slack FROM decided d
      WHERE d.all_ok AND d.cost > 0${mixed ? ` AND d.a <> ${QUOTA}` : ''}
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at
    )`,
    quotas &&
      `counted AS (
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      SELECT d.k, d.w, d.cap, split_part(d.new_st, ':', 2)::bigint, d.lim FROM decided d
      WHERE d.all_ok AND d.cost > 0${mixed ? ` AND d.a = ${QUOTA}` : ''}
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now()
    )`,
  ];
  return `
    WITH decided AS MATERIALIZED (
      SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
        ${single ? 'x.allowed = 1' : 'bool_and(x.allowed = 1) OVER (PARTITION BY c.req)'} AS all_ok
      FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, ${state} AS st,
          ${quotas ? `CASE WHEN ${newer} THEN q.period_start ELSE it.w END` : 'it.w'} AS w,
          ${quotas ? `CASE WHEN ${newer} THEN q.period_end ELSE it.cap END` : 'it.cap'} AS cap
        FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms
          FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs) WITH ORDINALITY
            AS u(k, a, lim, w, cap, cost, nw, req, i)
          WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
        ${reads.filter(Boolean).join('\n        ')}) c
      CROSS JOIN LATERAL ${S}.rl_decision(${algo ?? 'c.a'}, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x
    )${writes
      .filter(Boolean)
      .map((write) => `, ${write}`)
      .join('')}
    SELECT string_agg(CASE WHEN d.all_ok OR d.allowed = 0
        THEN d.allowed::text || ',' || d.remaining::text || ',' || d.reset_ms::text || ',' || d.retry_ms::text
        ELSE '1,' || d.remaining_now::text || ',' || d.reset_now::text || ',0' END, ',' ORDER BY d.i)
    INTO part FROM decided d;`;
}

/**
 * rl_consume_one: a call of one item, as when the store is not busy: three small statements (read, decide,
 * write) are set up faster than a round's. Arguments as the items' of rate_limit_consume.
 */
const consumeOneSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_consume_one(p_slack bigint, p_algo int, p_now bigint, p_key text, p_lim bigint,
  p_w bigint, p_cap bigint, p_cost bigint) RETURNS text
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_st text;
  v_w bigint := p_w;
  v_cap bigint := p_cap;
  v_d record;
  qs bigint;
  qu bigint;
  qe bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
  IF p_algo = ${QUOTA} THEN
    -- a quota counts in the key's newest period: a clock ahead may have begun the next one
    SELECT u.period_start, u.used, u.period_end INTO qs, qu, qe FROM ${S}.rate_limit_quota_usage u
      WHERE u.key = p_key AND u.period_start >= p_w ORDER BY u.period_start DESC LIMIT 1;
    IF FOUND THEN
      v_st := qs::text || ':' || qu::text;
      IF qs > p_w THEN v_w := qs; v_cap := qe; END IF;
    END IF;
  ELSE
    SELECT s.state INTO v_st FROM ${S}.rate_limit_state s WHERE s.key = p_key AND s.expires_at > p_now;
  END IF;
  CASE p_algo
${Object.values(ALGORITHM_CODES)
  .map(
    (code) =>
      `    WHEN ${code} THEN SELECT * INTO v_d FROM ${S}.rl_decision(${code}, v_st, p_lim, v_w, v_cap, p_now, p_cost);`,
  )
  .join('\n')}
  END CASE;
  IF v_d.allowed = 1 AND p_cost > 0 THEN
    IF p_algo = ${QUOTA} THEN
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit)
      VALUES (p_key, v_w, v_cap, split_part(v_d.new_st, ':', 2)::bigint, p_lim)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now();
    ELSE
      INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at) VALUES (p_key, v_d.new_st, p_now + v_d.reset_ms + p_slack)
      ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;
    END IF;
  END IF;
  RETURN v_d.allowed::text || ',' || v_d.remaining::text || ',' || v_d.reset_ms::text || ',' || v_d.retry_ms::text;
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

/**
 * rate_limit_consume: the consumes of several requests in one call (the store gathers the requests that arrive
 * while its statements are busy). Each request is decided all-or-nothing; requests are decided in their order,
 * in rounds: the store puts a request that shares a key with an earlier one in a later round, and each round is
 * one statement (roundSql). A request with two items on one key goes to rate_limit() instead.
 *   p_slack     ms added to every row's expiry
 *   p_single    whether every request has one item
 *   p_algo      the code of every item's algorithm when they share one, else 0
 *   p_nows      per item, the time in ms since the epoch; NULL (the array) to take the database's clock
 *   p_rounds    per round, the number of its first request (1-based, increasing)
 *   p_reqs      per item, the number of its request (items of a request are consecutive)
 *   p_keys, p_algos, p_lims, p_ws, p_caps, p_costs: per item, as for rate_limit()
 * Returns "allowed,remaining,reset_ms,retry_ms" per item, joined by commas, in item order.
 * Per-key transaction-level advisory locks, taken in key order (as 0.1.0 takes them, so that its instances and
 * these cannot deadlock during a rolling deploy) before any key is read, make the call atomic under concurrency; a statement of PL/pgSQL reads after the locks were granted. Each statement is
 * planned once per connection (a custom plan would expand every algorithm's SQL again at each call).
 */
export const consumeSql = (S: string): string => `${consumeOneSql(S)}
CREATE OR REPLACE FUNCTION ${S}.rate_limit_consume(p_slack bigint, p_single boolean, p_algo int, p_nows bigint[],
  p_rounds int[], p_reqs int[], p_keys text[], p_algos int[], p_lims bigint[], p_ws bigint[], p_caps bigint[],
  p_costs bigint[]) RETURNS text LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  db_now bigint;
  reply text;
  part text;
BEGIN
  IF p_nows IS NULL THEN
    db_now := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  END IF;
  IF cardinality(p_keys) = 1 THEN
    RETURN ${S}.rl_consume_one(p_slack, p_algo, coalesce(p_nows[1], db_now), p_keys[1], p_lims[1], p_ws[1], p_caps[1],
      p_costs[1]);
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
`;
