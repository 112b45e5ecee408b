/**
 * The decision protocol the stores' scripts (Lua for Redis, SQL for PostgreSQL) share with the TypeScript that
 * calls them and reads their replies. Each constant is defined here once, interpolated into the SQL and given to
 * the Lua by name (redis/lua-constants.ts; test/unit/shared-constants.spec.ts checks that no literal copy
 * remains); the algorithm codes are ALGORITHM_CODES (algorithms/index.ts), NEVER_FITS is the algorithms' own
 * (algorithm.ts).
 */
export { NEVER_FITS } from '../algorithms/algorithm.js';

/** The first integer of an item's decision in a reply: denied, allowed, or denied because the key is blocked. */
export const REPLY = { denied: 0, allowed: 1, blocked: 2 } as const;

/**
 * The integers of one item's decision in a reply: allowed (REPLY), remaining, reset_ms, retry_ms. An allowed
 * item's retry_ms is 0, or, when it asked for up to more than its cost (a lease), the units it took.
 */
export const REPLY_WIDTH = 4;

/**
 * Between an item's cost and the most it takes (`upTo`, a lease) in its cost field of a Redis call:
 * `<cost>~<up to>`; the cost alone otherwise.
 */
export const UP_TO_SEPARATOR = '~';

/** Added to an item's algorithm code when its policy has a block (the block's length is then its last field). */
export const BLOCK_FLAG = 16;

/**
 * The fields of a policy in a Redis call, by their 1-based position after the item's start: its code (the
 * algorithm's, BLOCK_FLAG added for a block, negated for a shadow item), limit, window (ms) and capacity (a
 * quota's period start and end in the window and capacity fields). A consume's item has its cost after them,
 * then a quota's next end and a block's length; a batch names each policy once, without costs.
 */
export const POLICY_FIELD = { code: 1, limit: 2, window: 3, capacity: 4 } as const;

/** The number of POLICY_FIELD fields, before an item's cost. */
export const POLICY_FIELDS = Object.keys(POLICY_FIELD).length;

/**
 * In a batch call (lua/requests.lua), in place of a request's number of items: a run of requests with the same
 * items (policies and costs) follows — their number, their number of items, each item's fields once — which
 * names each request's keys only.
 */
export const BATCH_RUN = 0;
