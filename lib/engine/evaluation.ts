import type { FailMode, RateLimitCount, RateLimitDecision } from '../policy/policy.types.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';

/** One policy of a request, resolved: what to consume, what to do when its store fails, and its place. */
export interface EngineItem extends RateLimitStoreItem {
  readonly failMode: FailMode;
  /** The policy's position in its route's plan: headers list policies in that order. */
  readonly order: number;
  /**
   * Which outcomes count, for the request path's refunds (lib/request/outcome.ts); every item is charged
   * alike. 'release': a concurrency lease, given back at the end whatever the outcome.
   */
  readonly count?: Exclude<RateLimitCount, 'all'> | 'release';
}

/** Items consumed together and what was decided for each, in the same order. */
export interface Evaluation {
  readonly items: readonly EngineItem[];
  decisions: RateLimitDecision[];
  /** Set by compensate(): given back already (or tried), so an outcome must not refund it again. */
  compensated?: true;
}

export const NOTHING: Evaluation = Object.freeze({ items: [], decisions: [] });

/** Whether an evaluation denies its request: an enforced item was denied (a shadow item never denies). */
export const denies = ({ items, decisions }: Evaluation): boolean =>
  decisions.some((d, i) => !d.allowed && items[i]?.shadow !== true);

/** A fail-closed policy could not be decided: its store failed (the failure has been reported). */
export class StoreUnavailable extends Error {
  constructor(
    readonly policy: string,
    readonly retryAfterMs: number,
  ) {
    super(`the store of policy "${policy}" failed and the policy fails closed`);
    this.name = 'StoreUnavailable';
  }
}

/** Two evaluations of one request as one (the rate limits, then the quotas of another store). */
export const merge = (a: Evaluation, b: Evaluation): Evaluation =>
  a.items.length === 0
    ? b
    : b.items.length === 0
      ? a
      : { items: [...a.items, ...b.items], decisions: [...a.decisions, ...b.decisions] };
