import type { ExecutionContext } from '@nestjs/common';

import type { DecisionEngine, EngineItem } from '../engine/decision-engine.js';
import type { PlanEntry, PlannedPolicy } from '../planning/route-planner.js';
import { type PolicyFunction, PolicyFunctionError, RateLimitPolicyError } from '../policy/policy.errors.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import { checkQuotaLimit, checkRequestLimit } from '../policy/value-checks.js';
import type { StoredOverride } from '../stores/overrides.js';
import { isPromise, type MaybePromise } from './maybe-promise.js';

/**
 * The limits of a request's items: the declared ones (a number, or a function of the request: the caller's
 * plan), or an override's for the item's identity (RateLimitService.override).
 */
export class RequestLimits {
  constructor(private readonly engine: DecisionEngine) {}

  /**
   * An entry's item once its identity and cost are known: with its request's limit and burst, or an override's
   * (RateLimitService.override) for its identity.
   */
  item(entry: PlanEntry, key: string, cost: number, ctx: ExecutionContext, where: string): MaybePromise<EngineItem> {
    const item = this.declared(entry, key, cost, ctx, where);
    const override = this.engine.overrides.of(entry.planned.policy, key);
    if (override === undefined) return item;
    if (isPromise(item)) return item.then((declared) => this.overridden(entry, declared, override));
    return this.overridden(entry, item, override);
  }

  /**
   * An item under an override: its limit, and its burst (else the declared one, when the policy declares one;
   * else the new limit, as a policy without a burst has). A dry run keeps the declared policy, and carries the
   * override's for the peek that tells what it would have answered (lib/engine/overrides/shadow-peek.ts).
   */
  private overridden(entry: PlanEntry, item: EngineItem, override: StoredOverride): EngineItem {
    const { planned } = entry;
    const limit = override.limit ?? item.policy.limit;
    const declaredBurst = planned.burst !== undefined ? item.policy.capacity : undefined;
    const policy = this.engine.withLimit(planned.policy, limit, override.burst ?? declaredBurst);
    const { shadow } = override;
    return { ...item, policy: shadow ? item.policy : policy, override: { shadow, limit, policy } };
  }

  /** An entry's item with its declared limits: a per-request limit or burst is resolved here. */
  private declared(
    entry: PlanEntry,
    key: string,
    cost: number,
    ctx: ExecutionContext,
    where: string,
  ): MaybePromise<EngineItem> {
    const { planned } = entry;
    if (planned.limit === undefined && planned.burst === undefined) {
      return itemOf(entry, planned.policy, key, cost);
    }
    const limit =
      planned.limit === undefined ? planned.policy.limit : this.limit(planned, planned.limit, 'limit', ctx, where);
    if (isPromise(limit)) return limit.then((l) => this.limited(entry, key, cost, l, ctx, where));
    return this.limited(entry, key, cost, limit, ctx, where);
  }

  /** An entry's item with its request's limit, once its burst is known. */
  private limited(
    entry: PlanEntry,
    key: string,
    cost: number,
    limit: number,
    ctx: ExecutionContext,
    where: string,
  ): MaybePromise<EngineItem> {
    const { planned } = entry;
    const burst = planned.burst === undefined ? undefined : this.limit(planned, planned.burst, 'burst', ctx, where);
    if (isPromise(burst)) {
      return burst.then((b) => itemOf(entry, this.engine.withLimit(planned.policy, limit, b), key, cost));
    }
    return itemOf(entry, this.engine.withLimit(planned.policy, limit, burst), key, cost);
  }

  /** A per-request limit or burst; a Promise only when its function returns one. */
  private limit(
    planned: PlannedPolicy,
    fn: (ctx: ExecutionContext) => unknown,
    field: 'limit' | 'burst',
    ctx: ExecutionContext,
    where: string,
  ): MaybePromise<number> {
    const value = calling(field, planned, where, () => fn(ctx));
    const fail = (problem: string): never => {
      throw new RateLimitPolicyError(`the ${field} function returned a bad value: ${problem}`, {
        policy: planned.policy.name,
        field,
        where: planned.where,
      });
    };
    // A quota's window is a nominal period length: its bound is the limit alone.
    const check = (v: unknown): number =>
      planned.policy.quota === undefined
        ? checkRequestLimit(v, planned.policy.windowMs, fail, field === 'limit' && planned.policy.algorithm === 'gcra')
        : checkQuotaLimit(v, fail);
    return isPromise(value) ? value.then(check) : check(value);
  }
}

/**
 * Calls a policy's function for the request on the handler `where`: what it throws, or its Promise rejects with,
 * becomes a PolicyFunctionError naming the function, so that it is not reported as a store failure.
 */
export function calling<T>(
  field: PolicyFunction,
  planned: PlannedPolicy,
  where: string,
  call: () => MaybePromise<T>,
): MaybePromise<T> {
  const threw = (error: unknown): never => {
    throw new PolicyFunctionError(field, planned.policy.name, where, error);
  };
  let value: MaybePromise<T>;
  try {
    value = call();
  } catch (error) {
    return threw(error);
  }
  return isPromise<T>(value) ? value.then(undefined, threw) : value;
}

/** The item of an entry for one invocation. */
export function itemOf(entry: PlanEntry, policy: ResolvedPolicy, key: string, cost: number): EngineItem {
  const { planned } = entry;
  return {
    policy,
    key,
    cost,
    failMode: planned.failMode,
    shadow: planned.shadow,
    order: entry.order,
    count: planned.count,
  };
}
