import { elementAt } from '../../util/element-at.js';
import type { RateLimitDecision, RateLimitDecisionSource } from '../../policy/policy.types.js';
import type { Clock } from '../../util/clock.js';
import { denies, type EngineItem, type Evaluation, sourceAt, withFailed } from '../evaluation.js';
import type { LeaseBook } from './lease-book.js';

/** Whether an item may be served from a lease: a leased policy, enforced, with a cost. */
const leased = (item: EngineItem): boolean => item.policy.lease !== undefined && item.shadow !== true && item.cost >= 1;

/**
 * A request's items as this instance's leases split them: the decisions of those spent here, and the items
 * for the store, each leased one asking for up to its key's next take.
 */
export interface LeaseSplit {
  readonly spent: ReadonlyMap<EngineItem, RateLimitDecision>;
  readonly forStore: readonly EngineItem[];
  /** The items whose take is its key's take on its way (the others of the key wait for it, or take their cost). */
  readonly takes: readonly EngineItem[];
}

/** Spends what the leases hold for `items`; the others go to the store, the leased ones with their `upTo`. */
export function splitByLeases(book: LeaseBook, items: readonly EngineItem[], nowMs: number): LeaseSplit {
  const spent = new Map<EngineItem, RateLimitDecision>();
  const forStore: EngineItem[] = [];
  const takes: EngineItem[] = [];
  for (const item of items) {
    if (!leased(item)) {
      forStore.push(item);
      continue;
    }
    const decision = book.spend(item.policy, item.key, item.cost, nowMs);
    if (decision !== undefined) {
      spent.set(item, decision);
      continue;
    }
    if (!book.taking(item.policy, item.key)) takes.push(item);
    const upTo = book.askFor(item.policy, item.key, item.cost, nowMs);
    forStore.push(upTo > item.cost ? { ...item, upTo } : item);
  }
  return { spent, forStore, takes };
}

/** The takes of leased keys a request waits for, one after the other, before it asks the store itself. */
export const MAX_TAKES_WAITED = 4;

/**
 * The takes on their way that a request's leased items wait for (their leases cannot cover them now): the
 * request asks the store only once those came back, so that a hot key's concurrent requests share one take.
 */
export function takesToWaitFor(book: LeaseBook, items: readonly EngineItem[], nowMs: number): Promise<void>[] {
  const waits: Promise<void>[] = [];
  for (const item of items) {
    if (!leased(item)) continue;
    const pending = book.pending(item.policy, item.key, item.cost, nowMs);
    if (pending !== undefined) waits.push(pending);
  }
  return waits;
}

/** Gives back to the leases what a refused request spent of them. */
export function unspend(book: LeaseBook, spent: ReadonlyMap<EngineItem, RateLimitDecision>): void {
  for (const item of spent.keys()) book.unspend(item.policy, item.key, item.cost);
}

/** The takes of a split came back, or failed: their keys may take again. */
export function settle(book: LeaseBook, split: LeaseSplit): void {
  for (const item of split.takes) book.settled(item.policy, item.key);
}

/**
 * The request's evaluation: the items the leases admitted, then the store's (`stored`, for the items sent at
 * `sentAtMs`; a failing store leaves out fail-open items, and a local fallback decides copies of its own). When
 * the request was admitted (`admitted`), the leases keep what the store's takes got beyond their costs.
 */
export function rejoin(
  book: LeaseBook,
  split: LeaseSplit,
  stored: Evaluation,
  sentAtMs: number,
  admitted: boolean,
): Evaluation {
  const decisions = stored.decisions.map((decision, i) => {
    const sent = elementAt(stored.items, i, "the store's items");
    if (!admitted || !leased(sent) || !decision.allowed) return decision;
    book.took(sent.policy, sent.key, sent.cost, decision, sentAtMs);
    return withLocalUnits(decision, sent);
  });
  if (split.spent.size === 0) return { ...stored, decisions };
  // Spent here: 'lease'; the others as the store's evaluation says (the store, the cache of denials, local).
  const sources: RateLimitDecisionSource[] = [...split.spent.keys()].map(() => 'lease');
  for (let i = 0; i < stored.items.length; i++) sources.push(sourceAt(stored, i));
  return withFailed(
    {
      items: [...split.spent.keys(), ...stored.items],
      decisions: [...split.spent.values(), ...decisions],
      sources,
    },
    stored.failed,
  );
}

/** A take's decision as the client sees it: what it took beyond the cost is still to spend here. */
function withLocalUnits(decision: RateLimitDecision, item: EngineItem): RateLimitDecision {
  const extra = (decision.granted ?? item.cost) - item.cost;
  if (extra <= 0) return decision;
  return { ...decision, remaining: Math.min(decision.limit, decision.remaining + extra) };
}

/**
 * The items of a request on a store that grants leases: those this instance's leases cover are admitted here,
 * the others go to the store in one call (`consume`; leased ones taking ahead, after the take of their key on
 * its way, if any, came back); when the request is refused, the leases get back what it spent of them.
 */
export async function consumeWithLeases(
  book: LeaseBook,
  items: readonly EngineItem[],
  clock: Clock,
  consume: (items: readonly EngineItem[]) => Promise<Evaluation>,
): Promise<Evaluation> {
  // a hot key's concurrent requests share its takes: wait for the one on its way (a few, then ask anyway)
  for (let n = 0; n < MAX_TAKES_WAITED; n++) {
    const waits = takesToWaitFor(book, items, clock.now());
    if (waits.length === 0) break;
    await Promise.all(waits);
  }
  const nowMs = clock.now();
  const split = splitByLeases(book, items, nowMs);
  let stored: Evaluation;
  try {
    stored = await consume(split.forStore);
  } catch (error) {
    unspend(book, split.spent);
    throw error;
  } finally {
    settle(book, split);
  }
  const admitted = !denies(stored);
  if (!admitted) unspend(book, split.spent);
  return rejoin(book, split, stored, nowMs, admitted);
}
