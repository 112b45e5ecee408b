import type { ExecutionContext, Logger } from '@nestjs/common';

import { type Evaluation, type FailModeDecision, sourceAt } from '../engine/decision-engine.js';
import type { ItemOverride } from '../engine/evaluation.js';
import { elementAt } from '../util/element-at.js';
import type { RateLimitMetrics } from '../metrics/otel-metrics.js';
import type { Criticality } from '../policy/criticality.js';
import type { RateLimitDecision, RateLimitDecisionSource, ResolvedPolicy } from '../policy/policy.types.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';
import { ThrottledLog } from '../util/throttled-log.js';

/** How long a shadow policy stays quiet in the log after reporting a would-be denial. */
const SHADOW_QUIET_MS = 60_000;

/**
 * One decided policy, as `onDecision` receives it. `key` is the identity the policy counted (a user id, an
 * address, your key function's value), `cost` the units the request asked for, `remaining`/`retryAfterMs`
 * as in the decision (retryAfterMs 0 when allowed, Infinity when the cost can never fit). `shadow` is true for
 * a policy in mode 'shadow': `allowed: false` then means it would have denied, and the request went on.
 * `context` is the Nest ExecutionContext of the request, or undefined for RateLimitService calls.
 * `skipped` is true when the policy's key function returned undefined for the request: the policy did not
 * apply (nothing consumed), `key` is '' and `remaining` the policy's limit. `source` says where the decision
 * came from (RateLimitDecisionSource): 'store', 'deny-cache', 'lease' or 'local' ('store' for a skipped policy,
 * which nothing decided); 'fail-open' or 'fail-closed' when its store (or its key, cost, limit or list
 * function) failed and its fail mode admitted or refused the request: nothing was counted, `remaining` is the
 * policy's limit (fail-open) or 0 (fail-closed, `retryAfterMs` the wait its 503 tells), `key` '' and `cost` 0
 * when they could not be resolved. `override` is there when an override of the key's limit is in force
 * (RateLimitService.override): `shadow: false` and `allowed` as decided under its `limit`; or, for a dry run
 * (`shadow: true`), what it would have answered (the decision followed the declared policy). A request that
 * load shedding refused (the `shedding` option) is one event with source 'shed', `policy` and `key` '',
 * `allowed: false`, `retryAfterMs` the wait its 503 tells and the handler's `criticality` (on HTTP no policy was
 * decided; outside HTTP its policies' events came before it, and what they charged was given back).
 */
export interface RateLimitDecisionEvent {
  readonly policy: string;
  readonly key: string;
  readonly allowed: boolean;
  readonly shadow: boolean;
  readonly blocked: boolean;
  readonly cost: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly context: ExecutionContext | undefined;
  readonly skipped: boolean;
  readonly source: RateLimitDecisionSource;
  readonly override?: RateLimitOverrideOutcome;
  /** With source 'shed': the criticality of the handler whose request load shedding refused. */
  readonly criticality?: Criticality;
}

/** How an override bore on a decision: applied, or what a dry run would have answered (RateLimitDecisionEvent). */
export interface RateLimitOverrideOutcome {
  readonly shadow: boolean;
  readonly limit: number;
  readonly allowed: boolean;
}

/** A decided item's override as the event and the metrics tell it (a dry run whose peek failed: none). */
function overrideOutcome(
  override: ItemOverride | undefined,
  decision: RateLimitDecision,
): RateLimitOverrideOutcome | undefined {
  if (override === undefined) return undefined;
  const { shadow, limit } = override;
  if (!shadow) return { shadow, limit, allowed: decision.allowed };
  return override.allowed === undefined ? undefined : { shadow, limit, allowed: override.allowed };
}

/**
 * Reports decided policies: the `onDecision` hook for each (called synchronously, never awaited; one that
 * throws is logged and the request goes on), and the would-be denials of shadow policies in the log, at
 * most once per policy per minute with the count of those held back. Costs nothing without a hook and
 * without shadow policies but one loop over the request's items.
 */
export class DecisionEvents {
  private readonly shadowLog = new ThrottledLog(SHADOW_QUIET_MS);
  /** OpenTelemetry instruments, set at module start when `@opentelemetry/api` is installed. */
  metrics: RateLimitMetrics | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly hook: ((event: RateLimitDecisionEvent) => void) | undefined,
  ) {}

  report(
    pairs: readonly (readonly [RateLimitStoreItem, RateLimitDecision, RateLimitDecisionSource?])[],
    context: ExecutionContext | undefined,
  ): void {
    for (const [item, decision, source = 'store'] of pairs) this.reportOne(item, decision, source, context);
  }

  /** report() of an evaluation's decisions, in its items' order, without a pair per decision. */
  reportEvaluation(evaluation: Evaluation, context: ExecutionContext | undefined): void {
    const { items, decisions } = evaluation;
    for (let i = 0; i < items.length; i++) {
      const decision = elementAt(decisions, i, 'the decisions of an evaluation');
      this.reportOne(items[i] as RateLimitStoreItem, decision, sourceAt(evaluation, i), context);
    }
  }

  private reportOne(
    item: RateLimitStoreItem & { readonly override?: ItemOverride },
    decision: RateLimitDecision,
    source: RateLimitDecisionSource,
    context: ExecutionContext | undefined,
  ): void {
    const shadow = item.shadow === true;
    if (shadow && !decision.allowed) this.logShadowDenial(item, decision);
    const override = overrideOutcome(item.override, decision);
    // Counted as failed-local when its store failed (fail-modes.ts): once per policy and request.
    if (source !== 'local')
      this.metrics?.decision(
        decision.policy,
        source === 'deny-cache' ? 'deny-cache' : decision.allowed ? 'allowed' : shadow ? 'shadow-denied' : 'denied',
        source,
        override,
      );
    if (this.hook === undefined) return;
    this.tell({
      policy: decision.policy,
      key: item.key,
      allowed: decision.allowed,
      shadow,
      blocked: decision.blocked === true,
      cost: item.cost,
      remaining: decision.remaining,
      retryAfterMs: decision.retryAfterMs,
      context,
      skipped: false,
      source,
      override,
    });
  }

  /**
   * The policies of an invocation that their fail mode decided (FailModeDecision): the hook is told, with
   * source 'fail-open' (allowed) or 'fail-closed' (refused, `retryAfterMs` the wait the 503 tells, see
   * lib/responses/retry-after.ts). The metrics counted them when the engine applied the fail modes.
   */
  failModes(failed: readonly FailModeDecision[] | undefined, context: ExecutionContext, retryAfterMs = 0): void {
    if (this.hook === undefined || failed === undefined) return;
    for (const { policy, key, cost, shadow, remaining, source } of failed) {
      const allowed = source === 'fail-open';
      this.tell({
        policy,
        key,
        allowed,
        shadow,
        blocked: false,
        cost,
        remaining,
        retryAfterMs: allowed ? 0 : retryAfterMs,
        context,
        skipped: false,
        source,
      });
    }
  }

  /** A policy its key function skipped for this invocation (SkipWatch): the metrics and the hook are told. */
  skipped(policy: ResolvedPolicy, context: ExecutionContext): void {
    this.metrics?.decision(policy.name, 'skipped');
    if (this.hook === undefined) return;
    this.tell({
      policy: policy.name,
      key: '',
      allowed: true,
      shadow: false,
      blocked: false,
      cost: 0,
      remaining: policy.limit,
      retryAfterMs: 0,
      context,
      skipped: true,
      source: 'store',
    });
  }

  /** A request load shedding refused: the metrics and the hook are told. */
  shed(criticality: Criticality, retryAfterMs: number, context: ExecutionContext): void {
    this.metrics?.shed(criticality);
    if (this.hook === undefined) return;
    this.tell({
      policy: '',
      key: '',
      allowed: false,
      shadow: false,
      blocked: false,
      cost: 0,
      remaining: 0,
      retryAfterMs,
      context,
      skipped: false,
      source: 'shed',
      criticality,
    });
  }

  /** Calls the hook; one that throws is logged and the request goes on. */
  private tell(event: RateLimitDecisionEvent): void {
    try {
      this.hook?.(event);
    } catch (error) {
      this.logger.error(`onDecision hook threw: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  private logShadowDenial(item: RateLimitStoreItem, decision: RateLimitDecision): void {
    this.shadowLog.note(decision.policy, (held) =>
      this.logger.warn(
        `Shadow policy "${decision.policy}" would have denied key "${item.key}" (cost ${item.cost}, ` +
          `${decision.remaining} remaining)${held > 0 ? ` (and ${held} more in the last minute)` : ''}; the request went on`,
      ),
    );
  }
}
