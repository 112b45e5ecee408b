import calculateSlot from 'cluster-key-slot';

import { elementAt } from '../../util/element-at.js';
import type { RateLimitDecision } from '../../policy/policy.types.js';
import type { StoreCallItem } from '../engine-store.js';
import type { StoredIdentities } from '../storage-key.js';

/** One call of the script on the items of one slot ('check' decides as 'consume' would, writing nothing). */
export type RunInSlot = (
  op: 'consume' | 'check' | 'peek' | 'refund' | 'charge',
  part: readonly StoreCallItem[],
) => Promise<RateLimitDecision[]>;

/** Whether a slot's decisions deny the request: one of its enforced items was denied. */
export const denied = (part: readonly StoreCallItem[], decisions: readonly RateLimitDecision[]): boolean =>
  decisions.some((d, j) => !d.allowed && elementAt(part, j, 'the items of a slot').shadow !== true);

/**
 * Indexes of the items grouped by the Cluster slot of their keys (one script may touch one slot only); on a
 * standalone Redis, one group of every item.
 */
export function slotGroups(
  items: readonly StoreCallItem[],
  identities: StoredIdentities,
  isCluster: boolean,
): number[][] {
  if (!isCluster) return [items.map((_, i) => i)];
  const groups = new Map<number, number[]>();
  items.forEach(({ policy, key }, i) => {
    const slot = calculateSlot(identities.key(policy, key));
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [i]);
    else group.push(i);
  });
  return [...groups.values()];
}

/** The items at the indices of `group` (one slot's indices into `items`, from the store's grouping by slot). */
export const slotItems = <T>(items: readonly T[], group: readonly number[]): T[] =>
  group.map((i) => elementAt(items, i, 'the items of a request across slots'));

/** Puts each decision of a slot's reply (one per item of the slot, in order) at its item's index in `out`. */
function place(out: RateLimitDecision[], group: readonly number[], decisions: readonly RateLimitDecision[]): void {
  group.forEach((i, j) => (out[i] = elementAt(decisions, j, "a slot's reply")));
}

/** A peek, refund or charge whose keys span several Cluster slots: one call per slot, at once. */
export async function acrossSlots(
  op: 'peek' | 'refund' | 'charge',
  items: readonly StoreCallItem[],
  groups: readonly number[][],
  run: RunInSlot,
): Promise<RateLimitDecision[]> {
  const out: RateLimitDecision[] = new Array(items.length);
  await Promise.all(
    groups.map(async (group) => {
      place(out, group, await run(op, slotItems(items, group)));
    }),
  );
  return out;
}

/**
 * A consume whose keys span several Cluster slots: first every slot checks its items (deciding as a consume
 * would, writing nothing), all at once; when one denies, nothing was written anywhere — all-or-nothing as in
 * one script, whatever the clocks. Otherwise every slot consumes its items; when a concurrent request took
 * units meanwhile and a slot denies, what the others consumed is refunded: the cluster can under-admit while
 * a refund is on its way, never over-admit. Two round trips for a request whose policies span slots.
 */
export async function consumeAcrossSlots(
  items: readonly StoreCallItem[],
  groups: readonly number[][],
  run: RunInSlot,
): Promise<RateLimitDecision[]> {
  const parts = groups.map((group) => slotItems(items, group));
  // parts[g], groups[g] and the g-th reply are one slot's.
  const partOf = (g: number) => elementAt(parts, g, 'the items of the slots');
  const placeAll = (decided: RateLimitDecision[][]): RateLimitDecision[] => {
    const out: RateLimitDecision[] = new Array(items.length);
    decided.forEach((decisions, g) => place(out, elementAt(groups, g, 'the slots'), decisions));
    return out;
  };
  const checked = await Promise.all(parts.map((part) => run('check', part)));
  if (checked.some((decisions, g) => denied(partOf(g), decisions))) {
    return placeAll(await startBlocks(parts, checked, run));
  }
  const decided = await Promise.all(parts.map((part) => run('consume', part)));
  const out = placeAll(decided);
  if (!decided.some((decisions, g) => denied(partOf(g), decisions))) return out;
  const consumed = decided.map((decisions, g) => (denied(partOf(g), decisions) ? -1 : g)).filter((g) => g >= 0);
  await Promise.all(
    consumed.map(async (g) => {
      // A shadow item that would have denied consumed nothing: nothing to give back.
      const decisions = elementAt(decided, g, 'the replies of the slots');
      const taken = elementAt(groups, g, 'the slots').filter(
        (_, j) => elementAt(decisions, j, "a slot's reply").allowed,
      );
      let refunded: RateLimitDecision[];
      try {
        refunded = await run(
          'refund',
          tookBack(
            slotItems(items, taken),
            decisions.filter((d) => d.allowed),
          ),
        );
      } catch {
        return; // the request stays denied; the units stay taken until they expire (under-admission only)
      }
      taken.forEach((i, j) => {
        out[i] = { ...elementAt(refunded, j, "a slot's reply to refund"), allowed: true, retryAfterMs: 0 };
      });
    }),
  );
  return out;
}

/**
 * A request that the check across slots denied: nothing was written, but a denial of a policy with a block
 * must start its block. Each slot with such a denial consumes its items, which denies again and writes the
 * block (or, if units came free meanwhile, consumes, and is given back at once). Returns the decisions.
 */
async function startBlocks(
  parts: readonly StoreCallItem[][],
  checked: RateLimitDecision[][],
  run: RunInSlot,
): Promise<RateLimitDecision[][]> {
  const blocking = (part: readonly StoreCallItem[], decisions: readonly RateLimitDecision[]) =>
    decisions.some((d, j) => {
      if (d.allowed || d.blocked === true) return false;
      const item = elementAt(part, j, 'the items of a slot');
      return item.shadow !== true && item.policy.blockMs !== undefined;
    });
  await Promise.all(
    parts.map(async (part, g) => {
      if (!blocking(part, elementAt(checked, g, 'the replies of the slots'))) return;
      const decided = await run('consume', part);
      if (denied(part, decided)) checked[g] = decided;
      else
        await run(
          'refund',
          tookBack(
            part.filter((_, j) => elementAt(decided, j, "a slot's reply").allowed),
            decided.filter((d) => d.allowed),
          ),
        );
    }),
  );
  return checked;
}

/** Items to refund what their allowed decisions took: the cost, or the units a lease was granted. */
function tookBack(items: readonly StoreCallItem[], allowed: readonly RateLimitDecision[]): StoreCallItem[] {
  return items.map((item, j) => {
    const granted = elementAt(allowed, j, 'the allowed decisions').granted;
    return granted === undefined ? item : { ...item, cost: granted, upTo: undefined };
  });
}
