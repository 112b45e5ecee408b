import type { ExecutionContext, Logger } from '@nestjs/common';

import type { ContextAdapter } from '../contexts/context-adapter.js';
import type { DecisionEngine, EngineItem } from '../engine/decision-engine.js';
import type { PlanEntry, PlannedPolicy } from '../planning/route-planner.js';
import { PolicyFunctionError, RateLimitPolicyError } from '../policy/policy.errors.js';
import { checkCost } from '../policy/value-checks.js';
import type { RateLimitIdentities } from '../policy/policy.types.js';
import { isPromise, type MaybePromise } from './maybe-promise.js';
import { calling, RequestLimits } from './request-limits.js';
import type { SkipWatch } from './skip-watch.js';

export { isPromise } from './maybe-promise.js';

/** A policy whose key, cost or limit could not be resolved: its fail mode applies. */
export interface ResolutionFailure {
  readonly item: PlannedPolicy;
  readonly error: unknown;
}

/** The items of a request, and the policies that failed to resolve. */
export interface ResolvedItems {
  readonly items: EngineItem[];
  readonly failures: ResolutionFailure[] | undefined;
}

/**
 * Request resolution: turns the planned policies of a handler into store items for one invocation — the
 * identity ('ip' and 'user' through the context's adapter, or the policy's key function), the cost and the
 * per-request limit — awaiting only what returns a Promise. A policy with no identity (its key function
 * returned undefined) is skipped; one whose function throws or returns a bad value is a failure.
 */
export class RequestResolver {
  /**
   * The entries (one per handler and policy, made at start) whose fallback from user to IP was logged: bounded
   * by the declared pairs, and a module default gets one warning on each handler it applies to.
   */
  private readonly fellBack = new WeakSet<PlanEntry>();
  /** Each item's limits: its request's, or an override's. */
  private readonly limits: RequestLimits;

  constructor(
    private readonly engine: DecisionEngine,
    private readonly user: ((ctx: ExecutionContext) => string | undefined) | undefined,
    private readonly logger: Logger,
    private readonly skips: SkipWatch,
  ) {
    this.limits = new RequestLimits(engine);
  }

  /**
   * `where` is the handler's `Class.method` (a module default's own `where` names no handler). Synchronous
   * unless a key, cost or limit function returns a Promise: most requests allocate no Promise here.
   */
  resolve(
    entries: readonly PlanEntry[],
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    where: string,
  ): MaybePromise<ResolvedItems> {
    // One policy (most routes): an array of one, not a push on an empty array (room for 17 elements).
    if (entries.length === 1) return this.resolveOne(entries[0] as PlanEntry, entries, ctx, adapter, where);
    const items: EngineItem[] = [];
    let failures: ResolutionFailure[] | undefined;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as PlanEntry;
      let item: MaybePromise<EngineItem | undefined>;
      try {
        item = this.item(entry, ctx, adapter, where);
      } catch (error) {
        (failures ??= []).push({ item: entry.planned, error });
        continue;
      }
      if (isPromise(item)) return this.resolveLater(entries, i, item, items, failures, ctx, adapter, where);
      if (item !== undefined) items.push(item);
    }
    return { items, failures };
  }

  /** resolve() of a single entry. */
  private resolveOne(
    entry: PlanEntry,
    entries: readonly PlanEntry[],
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    where: string,
  ): MaybePromise<ResolvedItems> {
    let item: MaybePromise<EngineItem | undefined>;
    try {
      item = this.item(entry, ctx, adapter, where);
    } catch (error) {
      return { items: [], failures: [{ item: entry.planned, error }] };
    }
    if (isPromise(item)) return this.resolveLater(entries, 0, item, [], undefined, ctx, adapter, where);
    return { items: item === undefined ? [] : [item], failures: undefined };
  }

  /** The rest of resolve() once an entry's functions returned a Promise: the entries in order, awaited. */
  private async resolveLater(
    entries: readonly PlanEntry[],
    at: number,
    pending: Promise<EngineItem | undefined>,
    items: EngineItem[],
    failures: ResolutionFailure[] | undefined,
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    where: string,
  ): Promise<ResolvedItems> {
    for (let i = at; i < entries.length; i++) {
      const entry = entries[i] as PlanEntry;
      try {
        const item = await (i === at ? pending : this.item(entry, ctx, adapter, where));
        if (item !== undefined) items.push(item);
      } catch (error) {
        (failures ??= []).push({ item: entry.planned, error });
      }
    }
    return { items, failures };
  }

  /** The item of one entry, undefined when it has no identity; a Promise only when one of its functions returns one. */
  private item(
    entry: PlanEntry,
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    where: string,
  ): MaybePromise<EngineItem | undefined> {
    const key = this.identity(entry, ctx, adapter, where);
    if (isPromise(key)) return key.then((k) => this.keyed(entry, k, ctx, where));
    return this.keyed(entry, key, ctx, where);
  }

  /** An entry's item once its identity is known: its cost, then its limits. */
  private keyed(
    entry: PlanEntry,
    key: string | undefined,
    ctx: ExecutionContext,
    where: string,
  ): MaybePromise<EngineItem | undefined> {
    const { planned } = entry;
    if (typeof planned.key === 'function') {
      if (key === undefined) {
        this.skips.skipped(entry, ctx, where);
        return undefined;
      }
      this.skips.applied(entry);
    }
    if (key === undefined) return undefined;
    const cost = this.cost(planned, ctx, where);
    if (isPromise(cost)) return cost.then((c) => this.limits.item(entry, key, c, ctx, where));
    return this.limits.item(entry, key, cost, ctx, where);
  }

  /** The user of an invocation: the module's `user` option, or the adapter's default. */
  userOf(ctx: ExecutionContext, adapter: ContextAdapter): string | undefined {
    return this.user === undefined ? adapter.defaultUser(ctx) : this.user(ctx);
  }

  /** The identity of a policy for this invocation; a Promise only when a key function returns one. */
  private identity(
    entry: PlanEntry,
    ctx: ExecutionContext,
    adapter: ContextAdapter,
    where: string,
  ): MaybePromise<string | undefined> {
    const { planned } = entry;
    const { key } = planned;
    if (key === 'ip') return `ip:${adapter.clientIp(ctx) ?? 'unknown'}`;
    if (key === 'user') {
      const user = this.userOf(ctx, adapter);
      if (user !== undefined) return `user:${user}`;
      // Reached only at the invocation's last decision point (a deferred policy is resolved after every guard),
      // so no guard is left that could still set the user.
      if (planned.explicitUser && !this.fellBack.has(entry)) this.warnFallback(entry, where);
      return `ip:${adapter.clientIp(ctx) ?? 'unknown'}`;
    }
    let value: unknown;
    try {
      value = key(ctx, this.identities(ctx, adapter));
    } catch (error) {
      throw new PolicyFunctionError('key', planned.policy.name, where, error);
    }
    if (isPromise(value)) {
      return value.then(
        (v) => checkIdentity(planned, v),
        (error: unknown) => {
          throw new PolicyFunctionError('key', planned.policy.name, where, error);
        },
      );
    }
    return checkIdentity(planned, value);
  }

  /**
   * The identities a key function may compose, each computed when read (lib/policy: RateLimitIdentities): own,
   * enumerable getters, as an object literal has them, so that a spread or JSON.stringify of them reads both
   * (a class with its getters on the prototype allocated less, and gave every client the key '{}').
   */
  private identities(ctx: ExecutionContext, adapter: ContextAdapter): RateLimitIdentities {
    const userOf = () => this.userOf(ctx, adapter);
    return {
      get ip() {
        return adapter.clientIp(ctx);
      },
      get user() {
        return userOf();
      },
    };
  }

  /** A limit the team declared per account silently becomes per address (one NAT, one budget): say so once. */
  private warnFallback(entry: PlanEntry, where: string): void {
    this.fellBack.add(entry);
    this.logger.warn(
      `Policy "${entry.planned.policy.name}" on ${where} is keyed 'user', but a request reached the limiter ` +
        'with no user: it is counted by client IP, so everyone behind one NAT or proxy shares the limit. ' +
        "Authenticate before the limiter (a guard that sets the user before RateLimitGuard, or the module's " +
        "`user` option), or set `key: 'ip'` if per-IP is what you mean. (Logged once per policy and handler.)",
    );
  }

  /** The cost of a policy for this invocation; a Promise only when a cost function returns one. */
  private cost(planned: PlannedPolicy, ctx: ExecutionContext, where: string): MaybePromise<number> {
    const { cost } = planned;
    if (cost === undefined) return 1;
    if (typeof cost === 'number') return cost;
    const value: unknown = calling('cost', planned, where, () => cost(ctx));
    return isPromise(value) ? value.then((v) => checkedCost(planned, v)) : checkedCost(planned, value);
  }
}

function checkIdentity(planned: PlannedPolicy, value: unknown): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  throw new RateLimitPolicyError(`key function returned ${typeof value}; it must return a string or undefined`, {
    policy: planned.policy.name,
    field: 'key',
    where: planned.where,
  });
}

function checkedCost(planned: PlannedPolicy, value: unknown): number {
  return checkCost(value, (problem) => {
    throw new RateLimitPolicyError(`the cost function returned a bad value: ${problem}`, {
      policy: planned.policy.name,
      field: 'cost',
      where: planned.where,
    });
  });
}
