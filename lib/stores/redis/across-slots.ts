import type { RateLimitDecision } from '../../policy/policy.types.js';
import type { RateLimitStoreItem } from '../rate-limit-store.js';

/** An item of a store call; `cost` is absent for peek and reset. */
export type SlotItem = Pick<RateLimitStoreItem, 'policy' | 'key' | 'shadow'> & { cost?: number };

/** One call of the script on the items of one slot ('check' decides as 'consume' would, writing nothing). */
export type RunInSlot = (
  op: 'consume' | 'check' | 'peek' | 'refund',
  part: readonly SlotItem[],
) => Promise<RateLimitDecision[]>;

/** Whether a slot's decisions deny the request: one of its enforced items was denied. */
export const denied = (part: readonly SlotItem[], decisions: readonly RateLimitDecision[]): boolean =>
  decisions.some((d, j) => !d.allowed && part[j].shadow !== true);

/** A peek or refund whose keys span several Cluster slots: one call per slot, at once. */
export async function acrossSlots(
  op: 'peek' | 'refund',
  items: readonly SlotItem[],
  groups: readonly number[][],
  run: RunInSlot,
): Promise<RateLimitDecision[]> {
  const out: RateLimitDecision[] = new Array(items.length);
  await Promise.all(
    groups.map(async (group) => {
      (
        await run(
          op,
          group.map((i) => items[i]),
        )
      ).forEach((d, j) => (out[group[j]] = d));
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
  items: readonly SlotItem[],
  groups: readonly number[][],
  run: RunInSlot,
): Promise<RateLimitDecision[]> {
  const parts = groups.map((group) => group.map((i) => items[i]));
  const place = (decided: RateLimitDecision[][]): RateLimitDecision[] => {
    const out: RateLimitDecision[] = new Array(items.length);
    decided.forEach((decisions, g) => decisions.forEach((d, j) => (out[groups[g][j]] = d)));
    return out;
  };
  const checked = await Promise.all(parts.map((part) => run('check', part)));
  if (checked.some((decisions, g) => denied(parts[g], decisions))) {
    return place(await startBlocks(parts, checked, run));
  }
  const decided = await Promise.all(parts.map((part) => run('consume', part)));
  const out = place(decided);
  if (!decided.some((decisions, g) => denied(parts[g], decisions))) return out;
  const consumed = decided.map((decisions, g) => (denied(parts[g], decisions) ? -1 : g)).filter((g) => g >= 0);
  await Promise.all(
    consumed.map(async (g) => {
      // A shadow item that would have denied consumed nothing: nothing to give back.
      const taken = groups[g].filter((_, j) => decided[g][j].allowed);
      let refunded: RateLimitDecision[];
      try {
        refunded = await run(
          'refund',
          taken.map((i) => items[i]),
        );
      } catch {
        return; // the request stays denied; the units stay taken until they expire (under-admission only)
      }
      refunded.forEach((d, j) => {
        out[taken[j]] = { ...d, allowed: true, retryAfterMs: 0 };
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
  parts: readonly SlotItem[][],
  checked: RateLimitDecision[][],
  run: RunInSlot,
): Promise<RateLimitDecision[][]> {
  const blocking = (part: readonly SlotItem[], decisions: readonly RateLimitDecision[]) =>
    decisions.some(
      (d, j) => !d.allowed && d.blocked !== true && part[j].shadow !== true && part[j].policy.blockMs !== undefined,
    );
  await Promise.all(
    parts.map(async (part, g) => {
      if (!blocking(part, checked[g])) return;
      const decided = await run('consume', part);
      if (denied(part, decided)) checked[g] = decided;
      else
        await run(
          'refund',
          part.filter((_, j) => decided[j].allowed),
        );
    }),
  );
  return checked;
}
