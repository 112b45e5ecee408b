import { ALGORITHM_CODES } from '../../algorithms/index.js';

import { ALLOWED, DENIED, blockedReply, blockingReply, decisionReply, replyText, standingReply } from './reply.sql.js';
import { newestPeriodSql } from './state-rows.sql.js';

const QUOTA = ALGORITHM_CODES.quota;

/**
 * One round of rate_limit_consume_v4: a set-based statement that reads every key of the round's items (a key
 * appears once in a round), decides each item through the algorithms' inlined SQL twins, and writes what the
 * requests allowed consumed, as consumeAll (consume-all.ts) does: a request is allowed when every enforced item
 * is (a shadow item never denies the others), and then writes its allowed items; a denied request writes
 * nothing, and reports its other items as their keys stand — but for a denial that starts a block, written in
 * the same statement, the state as it was. A key under a block is denied without a decision.
 * A statement is set up at every execution, which costs more than deciding a few items: so there is one for
 * each algorithm (`algo`, its code; null when the items' algorithms differ), leaving out the other algorithms
 * and the other table, and one for rounds whose requests have one item each (`single`), without the window
 * that tells whether every item of a request is allowed.
 * An allowed consume of a cost above 0 always leaves a state to keep, with a positive reset: every item written
 * has one.
 */
export function roundSql(S: string, algo: number | null, single: boolean): string {
  const mixed = algo === null;
  const rates = algo !== QUOTA; // the round may hold items of rate limits, in rate_limit_state
  const quotas = mixed || algo === QUOTA; // and of quotas, in rate_limit_quota_usage
  const isQuota = mixed ? `it.a = ${QUOTA}` : 'true';
  // a quota counts in the key's newest period when that is not older than the item's: a clock ahead may have
  // begun the next one; the newest row holds the key's block whatever its period
  const newer = 'q.period_start > it.w';
  const counts = 'q.period_start >= it.w';
  const quotaState = `CASE WHEN ${counts} THEN q.period_start::text || ':' || q.used::text END`;
  const state = !quotas ? 's.state' : `CASE WHEN ${isQuota} THEN ${quotaState}${rates ? ' ELSE s.state' : ''} END`;
  const until = !quotas
    ? 's.blocked_until'
    : `CASE WHEN ${isQuota} THEN q.blocked_until${rates ? ' ELSE s.blocked_until' : ''} END`;
  const reads = [
    rates &&
      `LEFT JOIN ${S}.rate_limit_state s ON ${mixed ? `it.a <> ${QUOTA} AND ` : ''}s.key = it.k AND s.expires_at > it.now_ms`,
    quotas && `LEFT JOIN LATERAL (${newestPeriodSql(S, `${isQuota} AND u.key = it.k`)}) q ON true`,
  ];
  // what an item writes: its new state when its request consumes, or the block its denial starts
  const writes = 'd.consumes OR d.blocks > 0';
  const written = [
    rates &&
      `written AS (
      INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (${writes})${mixed ? ` AND d.a <> ${QUOTA}` : ''}
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )`,
    quotas &&
      `counted AS (
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE (${writes})${mixed ? ` AND d.a = ${QUOTA}` : ''}
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )`,
  ];
  // passes: the item itself is allowed; all_ok: its request is (every enforced item passes)
  const passes = `c.until_ms <= c.now_ms AND x.allowed = ${ALLOWED}`;
  return `
    WITH decided AS MATERIALIZED (
      SELECT r.*, r.all_ok AND r.passes AND r.cost > 0 AS consumes,
        CASE WHEN r.until_ms <= r.now_ms AND r.allowed = ${DENIED} AND NOT r.sh THEN r.bl ELSE 0 END AS blocks
      FROM (SELECT c.*, x.new_st, x.allowed, x.remaining, x.reset_ms, x.retry_ms, x.remaining_now, x.reset_now,
          ${passes} AS passes,
          ${single ? `${passes} OR c.sh` : `bool_and(${passes} OR c.sh) OVER (PARTITION BY c.req)`} AS all_ok
        FROM (SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, ${state} AS st,
            coalesce(${until}, 0) AS until_ms,
            ${quotas ? `CASE WHEN ${newer} THEN q.period_start ELSE it.w END` : 'it.w'} AS w,
            ${quotas ? `CASE WHEN ${newer} THEN q.period_end ELSE it.cap END` : 'it.cap'} AS cap
          FROM (SELECT u.i, u.req, u.k, u.a, u.lim, u.w, u.cap, u.cost, coalesce(u.nw, db_now) AS now_ms,
              coalesce(u.sh, false) AS sh, coalesce(u.bl, 0) AS bl
            FROM unnest(p_keys, p_algos, p_lims, p_ws, p_caps, p_costs, p_nows, p_reqs, p_shadows, p_blocks)
              WITH ORDINALITY AS u(k, a, lim, w, cap, cost, nw, req, sh, bl, i)
            WHERE u.req >= p_rounds[rnd] AND u.req < coalesce(p_rounds[rnd + 1], 2147483647)) it
          ${reads.filter(Boolean).join('\n          ')}) c
        CROSS JOIN LATERAL ${S}.rl_algo_decision_v4(${algo ?? 'c.a'}, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    )${written
      .filter(Boolean)
      .map((write) => `, ${write}`)
      .join('')}
    SELECT string_agg(CASE
        WHEN d.until_ms > d.now_ms
          THEN ${replyText(blockedReply('d.until_ms', 'd.now_ms'))}
        WHEN d.blocks > 0 THEN ${replyText(blockingReply('d', 'd.blocks'))}
        WHEN d.all_ok OR NOT d.passes THEN ${replyText(decisionReply('d'))}
        ELSE ${replyText(standingReply('d.remaining_now', 'd.reset_now'))} END, ',' ORDER BY d.i)
    INTO part FROM decided d;`;
}
