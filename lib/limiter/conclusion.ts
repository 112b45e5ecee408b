import type { ExecutionContext } from '@nestjs/common';

import type { ContextAdapter } from '../contexts/context-adapter.js';
import type { EngineItem, Evaluation } from '../engine/decision-engine.js';
import { elementAt } from '../util/element-at.js';
import type { DecisionEvents } from './decision-events.js';
import { rateLimitHeaders } from '../responses/rate-limit-headers.js';
import { chosenWait } from '../responses/retry-after.js';
import { deniedMessage } from '../responses/rate-limit-exceptions.js';
import type { RateLimitHeaders } from '../responses/rate-limit-headers.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/**
 * The last step of the request path: reports every decision of the invocation (onDecision, shadow denials),
 * writes the rate-limit fields of the enforced ones, in the route's order (with those of the invocations that
 * share its response, where the adapter accumulates them), and denies through the context's adapter when one
 * of them denies.
 */
export function conclude(
  ctx: ExecutionContext,
  adapter: ContextAdapter,
  scheme: RateLimitHeaders,
  events: DecisionEvents,
  evaluations: readonly Evaluation[],
): void {
  // Plain loops and no pair per decision: this runs on every request, and what it allocates is garbage.
  let shadows = false;
  // Indexed loops: for...of makes an iterator and a result object per step until the function is optimized.
  for (let i = 0; i < evaluations.length; i++) {
    const e = evaluations[i] as Evaluation;
    events.reportEvaluation(e, ctx);
    for (let j = 0; j < e.items.length; j++) shadows ||= e.items[j]?.shadow === true;
  }
  const only = evaluations.length === 1 && !shadows ? evaluations[0] : undefined;
  // One evaluation without shadow policies (most requests) is shown as it is, in its items' order.
  // Arrays of their size: a push on an empty array gives it room for 17 elements.
  let policies: ResolvedPolicy[];
  let decisions: RateLimitDecision[];
  if (only !== undefined) {
    policies = new Array<ResolvedPolicy>(only.items.length);
    for (let i = 0; i < only.items.length; i++) policies[i] = (only.items[i] as EngineItem).policy;
    decisions = only.decisions;
  } else {
    policies = [];
    decisions = [];
    shownPairs(evaluations, shadows, policies, decisions);
  }
  // The resolvers of one GraphQL operation share its response, whose fields must name what all of them decided.
  const shown =
    adapter.accumulate === undefined || scheme === 'none'
      ? undefined
      : adapter.accumulate(ctx, policies, only === undefined ? decisions : decisions.slice());
  const headers =
    shown === undefined
      ? rateLimitHeaders(scheme, policies, decisions)
      : rateLimitHeaders(scheme, shown.policies, shown.decisions);
  // What this invocation is answered with is its own; the adapter keeps the longest Retry-After of a response.
  if (allAllowed(decisions)) {
    if (headers.length > 0) adapter.setHeaders(ctx, headers);
    return;
  }
  // Which denial answers the client, and the wait it is told: lib/responses/retry-after.ts says how.
  const denied = decisions.filter((d) => !d.allowed);
  const { decision: worst, retryAfter } = chosenWait({ denials: denied });
  const violated = [...new Set(denied.map((d) => d.policy))];
  if (retryAfter !== null) headers.push(['Retry-After', String(retryAfter)]);
  adapter.setHeaders(ctx, headers);
  adapter.deny(
    ctx,
    {
      code: 'RATE_LIMITED',
      message: deniedMessage(worst, retryAfter),
      policy: worst.policy,
      ...(retryAfter === null ? {} : { retryAfter }),
    },
    worst,
    violated,
  );
}

function allAllowed(decisions: readonly RateLimitDecision[]): boolean {
  for (let i = 0; i < decisions.length; i++) if (!(decisions[i] as RateLimitDecision).allowed) return false;
  return true;
}

/**
 * The policies and decisions the client is shown of several evaluations, or of one with shadow policies:
 * shadow policies never deny and are not shown, and the policies are in the route's order, also when the
 * guard and the interceptor each decided some.
 */
function shownPairs(
  evaluations: readonly Evaluation[],
  shadows: boolean,
  policies: ResolvedPolicy[],
  decisions: RateLimitDecision[],
): void {
  let pairs: (readonly [EngineItem, RateLimitDecision])[] = [];
  for (const e of evaluations) {
    for (let i = 0; i < e.items.length; i++) {
      pairs.push([e.items[i] as EngineItem, elementAt(e.decisions, i, 'the decisions of an evaluation')]);
    }
  }
  if (shadows) pairs = pairs.filter(([item]) => item.shadow !== true);
  if (evaluations.length > 1) pairs = pairs.sort(([a], [b]) => a.order - b.order);
  for (const [item, decision] of pairs) {
    policies.push(item.policy);
    decisions.push(decision);
  }
}
