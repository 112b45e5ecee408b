import type {
  FailMode,
  RateLimitCount,
  RateLimitDecision,
  RateLimitDecisionSource,
  ResolvedPolicy,
} from '../policy/policy.types.js';
import type { EngineStoreItem } from '../stores/engine-store.js';

/** One policy of a request, resolved: what to consume, what to do when its store fails, and its place. */
export interface EngineItem extends EngineStoreItem {
  readonly failMode: FailMode;
  /** The policy's position in its route's plan: headers list policies in that order. */
  readonly order: number;
  /**
   * Which outcomes count, for the request path's refunds (lib/limiter/outcome.ts); every item is charged
   * alike. 'release': a concurrency slot, given back at the end whatever the outcome.
   */
  readonly count?: Exclude<RateLimitCount, 'all'> | 'release';
  /** The override of the item's identity in force (RateLimitService.override), if any. */
  readonly override?: ItemOverride;
}

/** How an override bears on one item: applied (its policy is the override's variant), or a dry run. */
export interface ItemOverride {
  readonly shadow: boolean;
  /** The limit the override gives. */
  readonly limit: number;
  /** The policy with the override's limit and burst: the item's policy when applied, the one peeked in a dry run. */
  readonly policy: ResolvedPolicy;
  /** A dry run's answer, once the store told it (undefined: not known, the store failed to tell). */
  allowed?: boolean;
}

/**
 * A policy of a request that its fail mode decided, no store having decided it: its store failed, or its key,
 * cost, limit or list function did. 'fail-open' left it out (the request goes on, as far as it is concerned),
 * 'fail-closed' refused the request (503). `key` is '' and `cost` 0 when they could not be resolved;
 * `remaining` the policy's limit for 'fail-open' (nothing counted; 0 when the limit is per request and
 * unresolved), 0 for 'fail-closed'. The decisions metric counted it already (fail-modes.ts); onDecision is
 * told by the request path (lib/limiter/step-evaluation.ts).
 */
export interface FailModeDecision {
  readonly policy: string;
  readonly key: string;
  readonly cost: number;
  readonly shadow: boolean;
  readonly remaining: number;
  readonly source: 'fail-open' | 'fail-closed';
}

/** Items consumed together and what was decided for each, in the same order. */
export interface Evaluation {
  readonly items: readonly EngineItem[];
  decisions: RateLimitDecision[];
  /**
   * Where every decision came from, when not from the store (a constant: no object per request); `sources`,
   * when set, says it per decision instead (a request part spent from leases, part decided by the store).
   */
  readonly source?: RateLimitDecisionSource;
  readonly sources?: readonly RateLimitDecisionSource[];
  /** The items of a failed store call that their fail mode left out ('fail-open'), for onDecision. */
  readonly failed?: readonly FailModeDecision[];
  /** Set by compensate(): given back already (or tried), so an outcome must not refund it again. */
  compensated?: true;
}

export const NOTHING: Evaluation = Object.freeze({ items: [], decisions: [] });

/** Where the decision at `i` of an evaluation came from. */
export const sourceAt = (evaluation: Evaluation, i: number): RateLimitDecisionSource =>
  evaluation.sources?.[i] ?? evaluation.source ?? 'store';

/** The source of each decision of an evaluation, as a list (for joining evaluations of different sources). */
const sourcesOf = (evaluation: Evaluation): RateLimitDecisionSource[] =>
  evaluation.items.map((_, i) => sourceAt(evaluation, i));

/** Two evaluations' sources, joined: undefined when both came from the store alone. */
export function joinedSources(a: Evaluation, b: Evaluation): RateLimitDecisionSource[] | undefined {
  if (a.source === undefined && a.sources === undefined && b.source === undefined && b.sources === undefined) {
    return undefined;
  }
  return [...sourcesOf(a), ...sourcesOf(b)];
}

/** Whether an evaluation denies its request: an enforced item was denied (a shadow item never denies). */
export const denies = ({ items, decisions }: Evaluation): boolean =>
  decisions.some((d, i) => !d.allowed && items[i]?.shadow !== true);

/**
 * A fail-closed policy could not be decided: its store failed (the failure has been reported). `failed` is
 * every policy of the failed call or resolution as its fail mode decided it ('local' ones are left out: the
 * refusal came first), for onDecision.
 */
export class StoreUnavailable extends Error {
  constructor(
    readonly policy: string,
    readonly retryAfterMs: number,
    readonly failed: readonly FailModeDecision[] = [],
  ) {
    super(`the store of policy "${policy}" failed and the policy fails closed`);
    this.name = 'StoreUnavailable';
  }
}

/** `evaluation` with `sources` when some decision came from elsewhere than the store. */
export const withSources = (
  evaluation: { items: readonly EngineItem[]; decisions: RateLimitDecision[] },
  sources: readonly RateLimitDecisionSource[] | undefined,
): Evaluation => (sources === undefined ? evaluation : { ...evaluation, sources });

/** `evaluation` with `failed` (what fail modes left out) added to its own. */
export const withFailed = (evaluation: Evaluation, failed: readonly FailModeDecision[] | undefined): Evaluation =>
  failed === undefined || failed.length === 0
    ? evaluation
    : { ...evaluation, failed: evaluation.failed === undefined ? failed : [...evaluation.failed, ...failed] };

/** Two evaluations of one request as one (the rate limits, then the quotas of another store). */
export const merge = (a: Evaluation, b: Evaluation): Evaluation =>
  a.items.length === 0
    ? withFailed(b, a.failed)
    : b.items.length === 0
      ? withFailed(a, b.failed)
      : withFailed(
          withSources(
            { items: [...a.items, ...b.items], decisions: [...a.decisions, ...b.decisions] },
            joinedSources(a, b),
          ),
          [...(a.failed ?? []), ...(b.failed ?? [])],
        );
