import { elementAt } from '../../util/element-at.js';
import type { RateLimitDecision } from '../../policy/policy.types.js';
import type { DenyCache, DenyTicket } from './deny-cache.js';
import type { EngineItem, Evaluation } from '../evaluation.js';

/**
 * Whether the local cache of denials may answer for an item. Not cached: quota denials (they last until the
 * end of the period, and a plan change must lift them), concurrency denials (a lease given back in another
 * instance frees the key long before the retry-after) and shadow items (they deny nothing).
 */
export const cacheable = (item: EngineItem): boolean =>
  item.policy.quota === undefined && item.policy.algorithm !== 'concurrency' && item.shadow !== true;

/**
 * Denials answered by the local cache, with the request's other items as the store last reported them beside
 * the first of those denials (the items it did not see are left out): the 429 shows the same policies as the
 * store's.
 */
function withOthers(
  denials: ReadonlyMap<EngineItem, RateLimitDecision>,
  items: readonly EngineItem[],
  others: ReadonlyMap<string, RateLimitDecision> | undefined,
): Evaluation {
  const kept: EngineItem[] = [];
  const decisions: RateLimitDecision[] = [];
  for (const item of items) {
    const decision = denials.get(item) ?? others?.get(`${item.policy.id}\n${item.key}`);
    if (decision === undefined) continue;
    kept.push(item);
    decisions.push(decision);
  }
  return { items: kept, decisions, source: 'deny-cache' };
}

/**
 * The request's denials the cache holds (every one, not only the first: a 429 names each policy that refused
 * it), with its other items as the store last reported them; undefined when the cache holds none: ask the
 * store. Its source is 'deny-cache' (all of it: the others too were answered without a store call).
 */
export function fromCache(cache: DenyCache, items: readonly EngineItem[], nowMs: number): Evaluation | undefined {
  let denials: Map<EngineItem, RateLimitDecision> | undefined;
  let first: EngineItem | undefined;
  for (const item of items) {
    if (!cacheable(item)) continue;
    const denied = cache.check(item.policy, item.key, item.cost, nowMs);
    if (denied === undefined) continue;
    (denials ??= new Map()).set(item, denied);
    first ??= item;
  }
  if (denials === undefined || first === undefined) return undefined;
  return withOthers(denials, items, cache.others(first.policy, first.key, nowMs));
}

/** Remembers the denials of a consume's reply (of `ticket`), each with the request's other decisions. */
export function rememberDenials(
  cache: DenyCache,
  items: readonly EngineItem[],
  decisions: readonly RateLimitDecision[],
  nowMs: number,
  ticket: DenyTicket,
): void {
  let others: Map<string, RateLimitDecision> | undefined;
  decisions.forEach((d, i) => {
    const item = elementAt(items, i, 'the items sent to consume');
    if (d.allowed || !cacheable(item)) return;
    others ??= new Map(
      items.map(
        (other, j) =>
          [`${other.policy.id}\n${other.key}`, elementAt(decisions, j, "the store's reply to consume")] as const,
      ),
    );
    cache.remember(item.policy, item.key, item.cost, d, nowMs, ticket, others);
  });
}
