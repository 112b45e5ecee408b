import { NEVER_FITS, REPLY } from '../protocol.js';

/** The reply codes of protocol.ts, for the SQL of the PostgreSQL store. */
export const { allowed: ALLOWED, denied: DENIED, blocked: BLOCKED } = REPLY;

/**
 * One item's reply as SQL expressions, in the order of the Redis script's: allowed (protocol.ts' REPLY),
 * remaining, reset_ms, retry_ms. Every function that answers an item builds it here and writes it with
 * replyText or replyArray, so the replies of the consume statement and of rate_limit are one.
 */
export type ReplySql = readonly [allowed: string, remaining: string, resetMs: string, retryMs: string];

/** A step's reply as it decided: `d` names a row of SQL_DECISION's columns (algorithm.ts). */
export const decisionReply = (d: string): ReplySql => [
  `${d}.allowed`,
  `${d}.remaining`,
  `${d}.reset_ms`,
  `${d}.retry_ms`,
];

/** The reply of a key blocked until `until` (ms): denied without a decision, and without extending the block. */
export const blockedReply = (until: string, now: string): ReplySql => [
  `${BLOCKED}`,
  '0',
  `${until} - ${now}`,
  `${until} - ${now}`,
];

/**
 * The reply of a denial (`decision`, the step's reply) that starts a block of `block` ms: the longer of the two
 * waits, and a cost that can never fit stays one (NEVER_FITS).
 */
export const blockingReply = ([, remaining, resetMs, retryMs]: ReplySql, block: string): ReplySql => [
  `${BLOCKED}`,
  remaining,
  `greatest(${resetMs}, ${block})`,
  `CASE WHEN ${retryMs} = ${NEVER_FITS} THEN ${NEVER_FITS} ELSE greatest(${retryMs}, ${block}) END`,
];

/** The reply of an item that passed in a request that another item denied: how its key stands, no wait. */
export const standingReply = (remaining: string, reset: string): ReplySql => [`${ALLOWED}`, remaining, reset, '0'];

/** A reply as the consume functions return it: "allowed,remaining,reset_ms,retry_ms". */
export const replyText = (reply: ReplySql): string =>
  reply.map((e) => (/^-?\d+$/.test(e) ? `'${e}'` : `(${e})::text`)).join(` || ',' || `);

/** A reply as rate_limit returns it: bigint[] of the four values. */
export const replyArray = (reply: ReplySql): string => `ARRAY[${reply.join(', ')}]::bigint[]`;
