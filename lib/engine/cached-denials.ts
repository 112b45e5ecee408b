import type { RateLimitDecision } from '../policy/policy.types.js';
import type { EngineItem, Evaluation } from './evaluation.js';

/** Whether the local cache of denials may answer for an item (see consumeOn). */
export const cacheable = (item: EngineItem): boolean =>
  item.policy.quota === undefined && item.policy.algorithm !== 'concurrency' && item.shadow !== true;

/**
 * Denials answered by the local cache, with the request's other items as the store last reported them beside
 * the first of those denials (the items it did not see are left out): the 429 shows the same policies as the
 * store's.
 */
export function withOthers(
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
  return { items: kept, decisions };
}

/** Decisions of requests the local cache of denials answered, without a store call. */
export const fromDenyCache = new WeakSet<RateLimitDecision>();

/** Whether a decision came from the local cache of denials rather than from the store. */
export const isFromDenyCache = (decision: RateLimitDecision): boolean => fromDenyCache.has(decision);
