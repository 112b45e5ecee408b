import type { RateLimitMetrics } from '../metrics/otel-metrics.js';
import type { FailMode, ResolvedPolicy } from '../policy/policy.types.js';
import { isDefect } from '../stores/store-defects.js';
import type { FailModeDecision } from './evaluation.js';
import { DEFECT, failModesDoing, type FailureReporter, unresolvedDoing } from './failure-reporter.js';

/** What applying fail modes needs of the engine: its reporter, its local limits and, when on, its metrics. */
export interface FailureSide {
  readonly reporter: FailureReporter;
  readonly metrics: RateLimitMetrics | undefined;
  readonly local: { limitOf(policy: Pick<ResolvedPolicy, 'limit' | 'localLimit'>): number };
}

/** A policy of a request as far as its fail mode is concerned; key and cost when they were resolved. */
interface FailingItem {
  readonly policy: Pick<ResolvedPolicy, 'name' | 'limit' | 'localLimit'>;
  readonly failMode: FailMode;
  readonly shadow?: boolean;
  readonly key?: string;
  readonly cost?: number;
}

/** What fail modes did with the failing policies of a request: the first fail-closed one, and each decision. */
export interface FailModes {
  /** The first fail-closed policy, whose outage refuses the request; undefined when none fails closed. */
  readonly closed: string | undefined;
  /** The policies the fail modes decided, 'fail-open' or 'fail-closed' ('local' ones are decided locally). */
  readonly failed: FailModeDecision[];
}

/** The outcome of each fail mode when the store failed; a 'local' policy is then decided in this process. */
const STORE_FAILED = { open: 'failed-open', closed: 'failed-closed', local: 'failed-local' } as const;
/**
 * When a policy's key, cost or limit function failed, there is no item to decide anywhere: a 'local' policy is
 * left out, as an 'open' one.
 */
const UNRESOLVED = { ...STORE_FAILED, local: 'failed-open' } as const;
/** The `rate_limit.source` of each, the same way. */
const STORE_FAILED_SOURCE = { open: 'fail-open', closed: 'fail-closed', local: 'local' } as const;
const UNRESOLVED_SOURCE = { ...STORE_FAILED_SOURCE, local: 'fail-open' } as const;

/** Counts each item's failed decision, names the first fail-closed policy and gives each fail mode's decision. */
function failClosed(
  side: FailureSide,
  items: readonly FailingItem[],
  outcomes: typeof STORE_FAILED | typeof UNRESOLVED,
): FailModes {
  const sources = outcomes === STORE_FAILED ? STORE_FAILED_SOURCE : UNRESOLVED_SOURCE;
  const failed: FailModeDecision[] = [];
  for (const item of items) {
    const source = sources[item.failMode];
    side.metrics?.decision(item.policy.name, outcomes[item.failMode], source);
    if (source !== 'local') failed.push(failModeDecision(item, source));
  }
  return { closed: items.find((i) => i.failMode === 'closed')?.policy.name, failed };
}

/** The decision of a fail mode for `item` (see FailModeDecision). */
function failModeDecision(item: FailingItem, source: FailModeDecision['source']): FailModeDecision {
  const { name, limit } = item.policy;
  return {
    policy: name,
    key: item.key ?? '',
    cost: item.cost ?? 0,
    shadow: item.shadow === true,
    remaining: source === 'fail-closed' || Number.isNaN(limit) ? 0 : limit,
    source,
  };
}

/**
 * Reports failures to resolve policies (a key or cost function threw) and returns what their fail modes did:
 * the first fail-closed policy among them, whose request must then be refused (undefined when every one fails
 * open), and each one's decision. Their keys and costs are unknown: the planned `key` is not the item's.
 */
export function resolveFailures(
  side: FailureSide,
  failures: readonly { item: FailingItem; error: unknown }[],
): FailModes {
  for (const { item, error } of failures) {
    side.reporter.report(error, [item.policy.name], unresolvedDoing(item.policy.name, item.failMode));
  }
  return failClosed(
    side,
    failures.map(({ item }) => ({ policy: item.policy, failMode: item.failMode, shadow: item.shadow })),
    UNRESOLVED,
  );
}

/**
 * Reports the failure of a store call for `items` and returns what their fail modes did: the first fail-closed
 * policy, or undefined when none fails closed (the engine then decides the fail-local ones in this process),
 * and the decisions of the others. A defect (not an outage) is rethrown: the request fails, loudly, rather
 * than be admitted or refused by a fail mode.
 */
export function storeFailure(side: FailureSide, error: unknown, items: readonly FailingItem[]): FailModes {
  const policies = items.map((i) => i.policy.name);
  if (isDefect(error)) {
    side.reporter.report(error, policies, DEFECT);
    throw error;
  }
  side.reporter.report(
    error,
    policies,
    failModesDoing(items, (policy) => side.local.limitOf(policy)),
  );
  return failClosed(side, items, STORE_FAILED);
}
