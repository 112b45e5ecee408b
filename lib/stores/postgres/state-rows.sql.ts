import { ALGORITHM_CODES } from '../../algorithms/index.js';

import { ALLOWED, BLOCKED, DENIED, blockedReply, replyArray, standingReply } from './reply.sql.js';

const QUOTA = ALGORITHM_CODES.quota;

/**
 * The query of a quota key's newest period (period_start, used, period_end, blocked_until), where `where`
 * names the key (\`u.key = ...\`): it holds the key's block, and counts when it is not older than the caller's
 * period (a clock ahead may have begun the next one). PL/pgSQL callers add their INTO after it.
 */
export const newestPeriodSql = (S: string, where: string): string =>
  `SELECT u.period_start, u.used, u.period_end, u.blocked_until
      FROM ${S}.rate_limit_quota_usage u WHERE ${where} ORDER BY u.period_start DESC LIMIT 1`;

/**
 * Reading and writing one key's row, its block included, for the functions that go item by item (peek,
 * refund, block, reset, and the consumes of rate_limit). A block is the row's `blocked_until` (ms since
 * the epoch; NULL: none), beside the state it leaves as it was:
 * - rate limits: the row of rate_limit_state, which lives at least as long as the block (a key that holds
 *   only a block has the state '', which every twin reads as none);
 * - quotas: the key's newest row of rate_limit_quota_usage, the one its decisions count in or a later one
 *   (a block is written on the row of the period it was decided in, adding it with `used` 0 if needed; a
 *   block that outlasts its period stays the newest row's, and so the key's, until a later period is used).
 * rl_load_state also gives the period a quota counts in: the key's newest if it is later than the caller's
 * (a clock ahead began it), in w_ms and cap_ms; other algorithms get w and cap back.
 */
export const stateRowsSql = (S: string): string => `
CREATE OR REPLACE FUNCTION ${S}.rl_load_state(k text, algo int, w bigint, cap bigint, now_ms bigint,
  OUT st text, OUT until_ms bigint, OUT w_ms bigint, OUT cap_ms bigint)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  qs bigint;
  qu bigint;
  qe bigint;
BEGIN
  w_ms := w; cap_ms := cap;
  IF algo = ${QUOTA} THEN
    ${newestPeriodSql(S, 'u.key = k')} INTO qs, qu, qe, until_ms;
    IF qs >= w THEN
      st := qs::text || ':' || qu::text;
      IF qs > w THEN w_ms := qs; cap_ms := qe; END IF;
    END IF;
  ELSE
    SELECT s.state, s.blocked_until INTO st, until_ms FROM ${S}.rate_limit_state s
      WHERE s.key = k AND s.expires_at > now_ms;
  END IF;
  until_ms := coalesce(until_ms, 0);
END $fn$;

-- Writes the state of item (key, algo) (none: st NULL or ''), with a block until until_ms while
-- that lasts: quotas to the durable table, per period (w is its start), rate limits with their expiry.
CREATE OR REPLACE FUNCTION ${S}.rl_save_state(algo int, k text, st text, reset_ms bigint, slack bigint, now_ms bigint,
  lim bigint, w bigint, cap bigint, until_ms bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  blocked boolean := until_ms > now_ms;
BEGIN
  IF algo = ${QUOTA} THEN
    IF st IS NOT NULL OR blocked THEN
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      VALUES (k, w, cap, coalesce(split_part(st, ':', 2)::bigint, 0), lim, CASE WHEN blocked THEN until_ms END)
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until;
    ELSE
      DELETE FROM ${S}.rate_limit_quota_usage WHERE key = k AND period_start = w;
    END IF;
    IF NOT blocked THEN
      -- a block kept on an earlier period's row ends too
      UPDATE ${S}.rate_limit_quota_usage SET blocked_until = NULL
        WHERE key = k AND period_start < w AND blocked_until IS NOT NULL;
    END IF;
  ELSIF blocked THEN
    INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at, blocked_until)
    VALUES (k, coalesce(st, ''), now_ms + greatest(reset_ms, until_ms - now_ms) + slack, until_ms)
    ON CONFLICT (key) DO UPDATE
      SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until;
  ELSIF st IS NOT NULL AND st <> '' THEN
    -- a state whose reset has passed on this clock is kept for the slack: a clock behind may still count it
    INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at) VALUES (k, st, now_ms + greatest(reset_ms, 0) + slack)
    ON CONFLICT (key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = NULL;
  ELSE
    DELETE FROM ${S}.rate_limit_state WHERE key = k;
  END IF;
END $fn$;

-- How a key stands, as peek reports it: allowed (${ALLOWED}, or ${DENIED} with the wait of a cost of 1; ${BLOCKED}: blocked),
-- remaining, reset_ms, retry_ms.
CREATE OR REPLACE FUNCTION ${S}.rl_standing(algo int, st text, lim bigint, w bigint, cap bigint, now_ms bigint,
  until_ms bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $fn$
  SELECT CASE WHEN until_ms > now_ms THEN ${replyArray(blockedReply('until_ms', 'now_ms'))}
    WHEN r.remaining >= 1 THEN ${replyArray(standingReply('r.remaining', 'r.reset_ms'))}
    ELSE ARRAY[${DENIED}, r.remaining, r.reset_ms,
      (SELECT p.retry_ms FROM ${S}.rl_algo_decision(algo, st, lim, w, cap, now_ms, 1) p)] END
  FROM ${S}.rl_algo_decision(algo, st, lim, w, cap, now_ms, 0) r
$fn$;

-- Forgets the keys' state and blocks; a quota's usage of the periods before the caller's stays (billing).
CREATE OR REPLACE FUNCTION ${S}.rl_forget(keys text[], algos int[], ws bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM ${S}.rate_limit_state WHERE key = ANY(keys);
  DELETE FROM ${S}.rate_limit_quota_usage q USING unnest(keys, ws, algos) AS u(k, w, a)
    WHERE u.a = ${QUOTA} AND q.key = u.k AND q.period_start >= u.w;
  UPDATE ${S}.rate_limit_quota_usage q SET blocked_until = NULL FROM unnest(keys, algos) AS u(k, a)
    WHERE u.a = ${QUOTA} AND q.key = u.k AND q.blocked_until IS NOT NULL;
END $fn$;
`;
