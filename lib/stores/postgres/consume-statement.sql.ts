import { SQL_DECISION } from '../../algorithms/algorithm.js';
import { ALGORITHM_CODES } from '../../algorithms/index.js';

import {
  consumesSql,
  itemReplySql,
  letsThroughSql,
  passesSql,
  startsBlockSql,
  type ConsumedItem,
} from './all-or-nothing.sql.js';
import { decisionReply, standingReply } from './reply.sql.js';
import { newestPeriodSql } from './state-rows.sql.js';

const QUOTA = ALGORITHM_CODES.quota;

/** The columns of SQL_DECISION (algorithm.ts), which a decided item carries. */
const DECISION_COLUMNS = SQL_DECISION.split(', ').map((column) => column.split(' ')[0]);

/** The item in the row `row` (its read) and `decision` (its decision's columns), for all-or-nothing.sql.ts. */
const consumedItem = (row: string, decision: string): ConsumedItem => ({
  allowed: `${decision}.allowed`,
  until: `${row}.until_ms`,
  now: `${row}.now_ms`,
  shadow: `${row}.sh`,
  block: `${row}.bl`,
});

/** How one consume statement is built. */
export interface ConsumeStatement {
  /** The code of every item's algorithm (ALGORITHM_CODES), or null when the items' algorithms differ. */
  readonly algo: number | null;
  /** Whether every request has one item: no window tells whether all of a request's items are allowed. */
  readonly single: boolean;
  /**
   * Whether a request may hold a key more than once (`algo` null, `single` false): its items on one key then
   * decide one after the other (repeatedSql).
   */
  readonly repeated?: boolean;
  /**
   * A subquery of the items, aliased `it`, with the columns i (its number: the order of the reply), req (its
   * request's number), k (key), a (algorithm code), lim, w, cap, cost, now_ms, sh (shadow, never NULL) and bl
   * (block in ms, 0: none). A key appears once in it.
   */
  readonly items: string;
  /** The PL/pgSQL variable that receives the reply. */
  readonly into: string;
}

/**
 * The consume statement, one template for the rounds of rate_limit_consume and for its single-item call
 * (consume.sql.ts): a set-based statement that reads every key of its items (a key appears once in them), decides each item through the algorithms' inlined SQL twins, and writes what the requests allowed consumed, by the all-or-nothing rule
 * (all-or-nothing.sql.ts): a request is allowed when every enforced item is (a shadow item never denies the
 * others), and then writes its allowed items; a denied request writes nothing, and reports its other items as
 * their keys stand — but for a denial that starts a block, written in the same statement, the state as it was.
 * A key under a block is denied without a decision.
 * A statement is set up at every execution, which costs more than deciding a few items: so there is one for
 * each algorithm (`algo`, its code; null when the items' algorithms differ), leaving out the other algorithms
 * and the other table, and one for items whose requests have one item each (`single`), without the window
 * that tells whether every item of a request is allowed.
 * An allowed consume of a cost above 0 always leaves a state to keep, with a positive reset: every item written
 * has one.
 */
export function consumeStatementSql(
  S: string,
  { algo, single, repeated = false, items, into }: ConsumeStatement,
): string {
  const read = readSql(S, algo, items);
  const decided = repeated
    ? repeatedSql(S, read)
    : `WITH decided AS MATERIALIZED (
      SELECT r.*, ${consumesSql('r.all_ok', 'r.passes', 'r.cost')} AS consumes, ${startsBlockSql(consumedItem('r', 'r'))} AS blocks
      FROM (SELECT c.*, ${DECISION_COLUMNS.map((column) => `x.${column}`).join(', ')},
          ${passesSql(consumedItem('c', 'x'))} AS passes,
          ${single ? letsThroughSql(consumedItem('c', 'x')) : `bool_and(${letsThroughSql(consumedItem('c', 'x'))}) OVER (PARTITION BY c.req)`} AS all_ok
        FROM (${read}) c
        CROSS JOIN LATERAL ${S}.rl_algo_decision(${algo ?? 'c.a'}, c.st, c.lim, c.w, c.cap, c.now_ms, c.cost) x) r
    )`;
  return `
    ${decided}${writesSql(S, algo, repeated)}
    SELECT string_agg(${itemReplySql(
      consumedItem('d', 'd'),
      { blocks: 'd.blocks', requestAllowed: 'd.all_ok', passes: 'd.passes' },
      decisionReply('d'),
      standingReply('d.remaining_now', 'd.reset_now'),
    )}, ',' ORDER BY d.i)
    INTO ${into} FROM decided d;`;
}

/** The tables of a statement for `algo`: rate_limit_state for rate limits, rate_limit_quota_usage for quotas. */
const tablesOf = (algo: number | null) => ({
  mixed: algo === null,
  rates: algo !== QUOTA,
  quotas: algo === null || algo === QUOTA,
});

/** Every item with its key as the statement reads it: st (its state), until_ms (the end of its block), w, cap. */
function readSql(S: string, algo: number | null, items: string): string {
  const { mixed, rates, quotas } = tablesOf(algo);
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
  return `SELECT it.i, it.req, it.k, it.a, it.lim, it.cost, it.now_ms, it.sh, it.bl, ${state} AS st,
            coalesce(${until}, 0) AS until_ms,
            ${quotas ? `CASE WHEN ${newer} THEN q.period_start ELSE it.w END` : 'it.w'} AS w,
            ${quotas ? `CASE WHEN ${newer} THEN q.period_end ELSE it.cap END` : 'it.cap'} AS cap
          FROM ${items}
          ${reads.filter(Boolean).join('\n          ')}`;
}

/**
 * The statement's writes, from `decided`: an item's new state when its request consumes, or the block its denial
 * starts (of the items of a request on one key, the last that writes: repeatedSql).
 */
function writesSql(S: string, algo: number | null, repeated: boolean): string {
  const { mixed, rates, quotas } = tablesOf(algo);
  const writes = `(d.consumes OR d.blocks > 0)${repeated ? ' AND d.writer' : ''}`;
  const written = [
    rates &&
      `written AS (
      INSERT INTO ${S}.rate_limit_state AS s (key, state, expires_at, blocked_until)
      SELECT d.k, CASE WHEN d.consumes THEN d.new_st ELSE coalesce(d.st, '') END,
        d.now_ms + greatest(d.reset_ms, d.blocks) + p_slack, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE ${writes}${mixed ? ` AND d.a <> ${QUOTA}` : ''}
      ON CONFLICT (key) DO UPDATE
        SET state = excluded.state, expires_at = excluded.expires_at, blocked_until = excluded.blocked_until
    )`,
    quotas &&
      `counted AS (
      INSERT INTO ${S}.rate_limit_quota_usage AS q (key, period_start, period_end, used, quota_limit, blocked_until)
      SELECT d.k, d.w, d.cap, coalesce(split_part(CASE WHEN d.consumes THEN d.new_st ELSE d.st END, ':', 2)::bigint, 0),
        d.lim, CASE WHEN d.blocks > 0 THEN d.now_ms + d.blocks END
      FROM decided d WHERE ${writes}${mixed ? ` AND d.a = ${QUOTA}` : ''}
      ON CONFLICT (key, period_start) DO UPDATE SET used = excluded.used, quota_limit = excluded.quota_limit,
        period_end = excluded.period_end, updated_at = now(), blocked_until = excluded.blocked_until
    )`,
  ];
  return written
    .filter(Boolean)
    .map((write) => `, ${write}`)
    .join('');
}

/**
 * `decided` for requests that may hold a key more than once, as consumeAll decides them: the items of a request
 * on one key decide one after the other (o, the item's place among them), each on the state that the last one
 * before it that passed and consumed left (st_in; the first on the key as read, st), by a recursive query; a
 * request's standing replies are the key's as read (the first item's remaining_now and reset_now). Of the items
 * of a request on one key, only the last that writes does (writer): the last that consumes holds the key's new
 * state, and a block is written beside the state as read, as the last one that starts it says.
 */
function repeatedSql(S: string, read: string): string {
  const decision = (item: string, state: string) =>
    `${S}.rl_algo_decision(${item}.a, ${state}, ${item}.lim, ${item}.w, ${item}.cap, ${item}.now_ms, ${item}.cost)`;
  const kept = 'i, req, k, a, lim, cost, now_ms, sh, bl, st, until_ms, w, cap, o';
  const of = (row: string) =>
    kept
      .split(', ')
      .map((column) => `${row}.${column}`)
      .join(', ');
  const l = consumedItem('l', 'l');
  return `WITH RECURSIVE c AS MATERIALIZED (
      SELECT r.*, row_number() OVER (PARTITION BY r.req, r.k ORDER BY r.i) AS o FROM (${read}) r
    ), layered AS (
      SELECT ${of('c')}, c.st AS st_in, ${DECISION_COLUMNS.map((column) => `x.${column}`).join(', ')}
      FROM c CROSS JOIN LATERAL ${decision('c', 'c.st')} x WHERE c.o = 1
      UNION ALL
      SELECT ${of('n')}, y.st_in, ${DECISION_COLUMNS.slice(0, 5)
        .map((column) => `x.${column}`)
        .join(', ')}, p.remaining_now, p.reset_now
      FROM layered p JOIN c n ON n.req = p.req AND n.k = p.k AND n.o = p.o + 1
        CROSS JOIN LATERAL (SELECT CASE WHEN ${passesSql(consumedItem('p', 'p'))} AND p.cost > 0 THEN p.new_st
          ELSE p.st_in END AS st_in) y
        CROSS JOIN LATERAL ${decision('n', 'y.st_in')} x
    ), decided AS MATERIALIZED (
      SELECT w.*, w.o = max(w.o) FILTER (WHERE w.consumes OR w.blocks > 0) OVER (PARTITION BY w.req, w.k) AS writer
      FROM (SELECT r.*, ${consumesSql('r.all_ok', 'r.passes', 'r.cost')} AS consumes, ${startsBlockSql(consumedItem('r', 'r'))} AS blocks
        FROM (SELECT l.*, ${passesSql(l)} AS passes, bool_and(${letsThroughSql(l)}) OVER (PARTITION BY l.req) AS all_ok
          FROM layered l) r) w
    )`;
}
