import { ALGORITHM_CODES, kernelOf } from '../../algorithms/index.js';
import { periodOf } from '../../algorithms/quota/quota.js';
import { systemClock } from '../../util/clock.js';
import type { StoreCallItem } from '../engine-store.js';
import type { StoredIdentities } from '../storage-key.js';

/** The items of one request as rate_limit_consume takes them: one entry per item in each column. */
export interface ItemColumns {
  readonly keys: readonly string[];
  readonly algos: readonly number[];
  readonly limits: readonly number[];
  readonly windows: readonly number[];
  readonly capacities: readonly number[];
  readonly costs: readonly number[];
  /** Whether each item is a shadow item; null when none is. */
  readonly shadows: readonly boolean[] | null;
  /** The block in ms that a denial of each item starts (0: none); null when no item has one. */
  readonly blocks: readonly number[] | null;
}

/** The columns every item has, in the order of the SQL functions' parameters that take them. */
export const ITEM_COLUMNS = ['keys', 'algos', 'limits', 'windows', 'capacities', 'costs'] as const;

/** The arrays of ITEM_COLUMNS, in that order: the values of those parameters. */
export const columnArrays = (columns: ItemColumns): (readonly (string | number)[])[] =>
  ITEM_COLUMNS.map((name) => columns[name]);

/**
 * The columns of the statements for `items`: storage keys, and each item's algorithm code, limit, window and
 * capacity — its own policy's, which may be a per-plan variant of a policy id other items share — or, for a
 * quota, its current period (from the app's clock, `now`, or the system clock when the database's decides).
 */
export function itemColumns(
  items: readonly StoreCallItem[],
  identities: StoredIdentities,
  now: number | null,
): ItemColumns {
  const keys: string[] = [];
  const algos: number[] = [];
  const limits: number[] = [];
  const windows: number[] = [];
  const capacities: number[] = [];
  const costs: number[] = [];
  let shadows: boolean[] | null = null;
  let blocks: number[] | null = null;
  items.forEach(({ policy, key, cost = 0, shadow }, i) => {
    keys.push(identities.key(policy, key));
    algos.push(ALGORITHM_CODES[kernelOf(policy)]);
    limits.push(policy.limit);
    if (policy.quota !== undefined) {
      // a quota passes its current period (from the app's clock) in place of a window
      const { startMs, endMs } = periodOf(policy, now ?? systemClock.now());
      windows.push(startMs);
      capacities.push(endMs);
    } else {
      windows.push(policy.windowMs);
      capacities.push(policy.capacity);
    }
    costs.push(cost);
    if (shadow === true) (shadows ??= Array<boolean>(items.length).fill(false))[i] = true;
    if (policy.blockMs !== undefined) (blocks ??= Array<number>(items.length).fill(0))[i] = policy.blockMs;
  });
  return { keys, algos, limits, windows, capacities, costs, shadows, blocks };
}
