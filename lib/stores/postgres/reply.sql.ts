import { NEVER_FITS, REPLY } from '../protocol.js';

/** The reply codes of protocol.ts, for the SQL of the PostgreSQL store. */
export const { allowed: ALLOWED, denied: DENIED, blocked: BLOCKED } = REPLY;

/**
 * retry_ms of a denial that starts a block of `block` ms (both SQL expressions): the longer of the two waits,
 * and a cost that can never fit stays one (NEVER_FITS).
 */
export const blockingRetrySql = (retry: string, block: string): string =>
  `CASE WHEN ${retry} = ${NEVER_FITS} THEN ${NEVER_FITS} ELSE greatest(${retry}, ${block}) END`;
