import { ALLOWED, DENIED, blockedReply, blockingReply, replyText, type ReplySql } from './reply.sql.js';

/**
 * The all-or-nothing rule of a consume with blocks, as consumeAll (consume-all.ts) states it, for the consume
 * statement (consume-statement.sql.ts). Each builder takes the SQL names under which the statement holds an
 * item's values, and returns an SQL expression.
 */
export interface ConsumedItem {
  /** The decision's allowed code (SQL_DECISION's `allowed`). */
  readonly allowed: string;
  /** The end of the key's block in ms since the epoch (0: none), as it was read before the request. */
  readonly until: string;
  /** The time of the decision, ms since the epoch. */
  readonly now: string;
  /** Whether the item is a shadow item (boolean, never NULL). */
  readonly shadow: string;
  /** The block in ms that a denial of the item starts (0: none; never NULL). */
  readonly block: string;
}

/** Whether the item itself is allowed: its key is not blocked and its decision allows. */
export const passesSql = (item: ConsumedItem): string =>
  `${item.until} <= ${item.now} AND ${item.allowed} = ${ALLOWED}`;

/**
 * Whether the item lets its request through: it passes, or it is a shadow item (which never denies the others).
 * A request is allowed when every one of its items does (`bool_and` of this, or an AND over them).
 */
export const letsThroughSql = (item: ConsumedItem): string => `(${passesSql(item)} OR ${item.shadow})`;

/**
 * Whether the item writes its new state: its request is allowed (`requestAllowed`), it passes (`passes`,
 * passesSql's value) and it consumes something. Nothing else of a request is written but blocks.
 */
export const consumesSql = (requestAllowed: string, passes: string, cost: string): string =>
  `${requestAllowed} AND ${passes} AND ${cost} > 0`;

/**
 * The block in ms that the item's denial starts (0: none): an enforced item denied by its decision, on a key not
 * blocked already (a blocked key is denied without a decision, and its block is not extended). It is written
 * at once, whatever the rest of the request, beside the key's state as it was.
 */
export const startsBlockSql = (item: ConsumedItem): string =>
  `CASE WHEN ${item.until} <= ${item.now} AND ${item.allowed} = ${DENIED} AND NOT ${item.shadow} THEN ${item.block} ELSE 0 END`;

/**
 * The item's reply, as replyText writes it: blocked before the request; starting a block
 * (`blocks`, startsBlockSql's value); its decision when its request is allowed or it did not pass itself; else
 * how its key stands (`standing`), since a denied request consumes nothing.
 */
export function itemReplySql(
  item: ConsumedItem,
  values: { blocks: string; requestAllowed: string; passes: string },
  decision: ReplySql,
  standing: ReplySql,
): string {
  return `CASE WHEN ${item.until} > ${item.now} THEN ${replyText(blockedReply(item.until, item.now))}
        WHEN ${values.blocks} > 0 THEN ${replyText(blockingReply(decision, values.blocks))}
        WHEN ${values.requestAllowed} OR NOT ${values.passes} THEN ${replyText(decision)}
        ELSE ${replyText(standing)} END`;
}
