import type { ExecutionContext } from '@nestjs/common';

import type { ContextAdapter } from '../contexts/context-adapter.js';
import { type EngineItem, type Evaluation, sourceAt } from '../engine/decision-engine.js';
import { elementAt } from '../util/element-at.js';
import type { DecisionEvents } from './decision-events.js';
import { rateLimitHeaders } from '../responses/rate-limit-headers.js';
import { chosenWait } from '../responses/retry-after.js';
import { deniedMessage } from '../responses/rate-limit-exceptions.js';
import type { RateLimitHeaders } from '../responses/rate-limit-headers.js';
import type { RateLimitDecision, RateLimitDecisionSource, ResolvedPolicy } from '../policy/policy.types.js';

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
  // Plain loops: this runs on every request, and the closures of flatMap and map would be garbage.
  let pairs: (readonly [EngineItem, RateLimitDecision, RateLimitDecisionSource])[] = [];
  let shadows = false;
  for (const e of evaluations) {
    for (let i = 0; i < e.items.length; i++) {
      const item = e.items[i] as EngineItem;
      shadows ||= item.shadow === true;
      pairs.push([item, elementAt(e.decisions, i, 'the decisions of an evaluation'), sourceAt(e, i)]);
    }
  }
  events.report(pairs, ctx);
  // Shadow policies never deny and are not shown.
  if (shadows) pairs = pairs.filter(([item]) => item.shadow !== true);
  // Policies in the route's order, also when the guard and the interceptor each decided some.
  if (evaluations.length > 1) pairs = pairs.sort(([a], [b]) => a.order - b.order);
  const decisions: RateLimitDecision[] = [];
  const policies: ResolvedPolicy[] = [];
  for (const [item, decision] of pairs) {
    policies.push(item.policy);
    decisions.push(decision);
  }
  // The resolvers of one GraphQL operation share its response, whose fields must name what all of them decided.
  const shown =
    adapter.accumulate === undefined || scheme === 'none' ? undefined : adapter.accumulate(ctx, policies, decisions);
  const headers =
    shown === undefined
      ? rateLimitHeaders(scheme, policies, decisions)
      : rateLimitHeaders(scheme, shown.policies, shown.decisions);
  // What this invocation is answered with is its own; the adapter keeps the longest Retry-After of a response.
  const denied = decisions.filter((d) => !d.allowed);
  if (denied.length === 0) {
    if (headers.length > 0) adapter.setHeaders(ctx, headers);
    return;
  }
  // Which denial answers the client, and the wait it is told: lib/responses/retry-after.ts says how.
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
