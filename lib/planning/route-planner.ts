import type { DiscoveryService, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';

import { compileList } from '../lists/address-list.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import { validatePolicy } from '../policy/validate-policy.js';
import { RATE_LIMIT_POLICIES, RATE_LIMIT_SKIP } from '../rate-limit.constants.js';
import { contextOf, type ContextType, GUARDS_METADATA_KEY, type HandlerKind, handlerKindOf } from './handler-kinds.js';
import { checkFieldEnhancers, checkRpcKeys } from './context-checks.js';
import { coveredByDecorators, needsGuard } from './guard-coverage.js';
import {
  NO_POLICIES,
  type PlannedApplication,
  type PlannedPolicy,
  type RoutePlan,
  type RoutePlannerOptions,
} from './route-plan.js';
import { handlerLabel, nameOf } from '../handler-label.js';

export type { PlanEntry, PlannedApplication, PlannedPolicy, RoutePlan, RoutePlannerOptions } from './route-plan.js';

/** Same limits: a limit that is a function of the request (NaN here) is the same as another such. */
function sameLimits(a: ResolvedPolicy, b: ResolvedPolicy): boolean {
  return (
    a.algorithm === b.algorithm &&
    Object.is(a.limit, b.limit) &&
    a.windowMs === b.windowMs &&
    Object.is(a.capacity, b.capacity) &&
    a.anchor === b.anchor
  );
}

/**
 * Route planning: finds every handler of the application — controllers (HTTP routes and microservice
 * handlers) and providers (GraphQL resolvers, WebSocket gateways) — merges the policies each one gets
 * (defaults, class, handler; same name replaces; skips remove), validates them, and keeps one plan per
 * (class, handler). A declaration that would never be enforced is an error at start naming `Class.method`.
 */
export class RoutePlanner {
  /** By class then handler: a handler inherited from a base class is one function shared by subclasses. */
  private readonly plans = new WeakMap<object, Map<object, RoutePlan>>();
  private readonly named = new Map<string, { policy: ResolvedPolicy; where: string }>();
  private readonly defaults: readonly PlannedPolicy[];

  constructor(
    private readonly options: RoutePlannerOptions,
    private readonly reflector: Reflector,
  ) {
    this.defaults = options.defaults.map((p) => this.plan(p, 'RateLimitModule defaults'));
  }

  /** Every policy declared anywhere, by name (RateLimitService looks policies up by name). */
  policyNamed(name: string): ResolvedPolicy | undefined {
    return this.named.get(name)?.policy;
  }

  /** Every declared policy, with where it was first declared. */
  declared(): IterableIterator<{ policy: ResolvedPolicy; where: string }> {
    return this.named.values();
  }

  /**
   * Plans every handler of the application, so that a bad declaration stops the start. `moduleRef` reads
   * the GraphQL module's options: guards run on field resolvers only with `fieldResolverEnhancers: ['guards']`.
   */
  walk(discovery: DiscoveryService, scanner: MetadataScanner, moduleRef: ModuleRef): PlannedApplication {
    const contexts = new Set<ContextType>();
    const deferred: { prototype: object; method: string }[] = [];
    const rpc: { classRef: object; prototype: object; method: string }[] = [];
    const counted: { prototype: object; method: string }[] = [];
    const unguarded: RoutePlan[] = [];
    const seen = new Set<unknown>();
    const controllers = discovery.getControllers();
    const classes = [
      ...controllers.map((w) => ({ metatype: w.metatype, controller: true })),
      ...discovery.getProviders().map((w) => ({ metatype: w.metatype, controller: false })),
    ];
    for (const { metatype, controller } of classes) {
      if (typeof metatype !== 'function' || seen.has(metatype)) continue;
      seen.add(metatype);
      const prototype = metatype.prototype as Record<string, unknown> | undefined;
      if (prototype === undefined) continue;
      let handlers = 0;
      for (const method of scanner.getAllMethodNames(prototype)) {
        const handler = prototype[method];
        if (typeof handler !== 'function') continue;
        const kind = handlerKindOf(metatype, handler, controller);
        const plan = this.planFor(metatype, handler, method, kind);
        if (kind === 'none') continue;
        handlers++;
        contexts.add(contextOf(kind));
        if (kind === 'graphql-field' && plan.policies.length > 0) checkFieldEnhancers(plan, moduleRef);
        if (plan.deferred) deferred.push({ prototype, method });
        if (plan.counted && needsResult(plan, kind)) counted.push({ prototype, method });
        if ((kind === 'rpc' || kind === 'rpc-event') && plan.policies.length > 0) {
          rpc.push({ classRef: metatype, prototype, method });
        }
        if (this.options.guardsPlaced && needsGuard(plan) && !coveredByDecorators(this.reflector, metatype, handler)) {
          unguarded.push(plan);
        }
      }
      const classPolicies = this.reflector.get<RateLimitPolicy[] | undefined>(RATE_LIMIT_POLICIES, metatype);
      if (handlers === 0 && !controller && (classPolicies?.length ?? 0) > 0) {
        throw new RateLimitPolicyError(
          'is declared on a class Nest calls no handler of (not a controller, resolver or gateway); it would never apply',
          { policy: classPolicies?.[0]?.name, where: nameOf(metatype, 'class') },
        );
      }
    }
    if (controllers.length > 0) contexts.add('http');
    return { contexts, deferred, rpc, counted, unguarded };
  }

  /**
   * The plan of a handler of a class. Every handler's plan is made at start by walk(), which knows the
   * method's name and kind; a handler not seen there (none should be) is planned as an HTTP route.
   */
  planFor(classRef: object, handler: object, method?: string, kind?: HandlerKind): RoutePlan {
    let byHandler = this.plans.get(classRef);
    const known = byHandler?.get(handler);
    if (known !== undefined) return known;
    const plan = this.makePlan(classRef, handler, method, kind ?? 'http');
    if (byHandler === undefined) this.plans.set(classRef, (byHandler = new Map()));
    byHandler.set(handler, plan);
    return plan;
  }

  private makePlan(classRef: object, handler: object, method: string | undefined, kind: HandlerKind): RoutePlan {
    const where = handlerLabel(classRef, handler, 'controller', method);
    const declaredOn = (target: object): RateLimitPolicy[] =>
      this.reflector.get<RateLimitPolicy[] | undefined>(RATE_LIMIT_POLICIES, target as never) ?? [];
    if (kind === 'none') {
      if (Reflect.getOwnMetadata(RATE_LIMIT_POLICIES, handler) !== undefined) {
        throw new RateLimitPolicyError(
          'is declared on a method Nest never calls as a handler (not a route, resolver, gateway message or microservice handler); it would never apply',
          { policy: declaredOn(handler)[0]?.name, where },
        );
      }
      return NO_POLICIES;
    }
    const skipOf = (target: object) =>
      this.reflector.get<true | string[] | undefined>(RATE_LIMIT_SKIP, target as never);
    const classSkip = skipOf(classRef);
    const handlerSkip = skipOf(handler);
    const byName = new Map<string, PlannedPolicy>();
    // A field resolver gets only its own policies: defaults and its class's are for the root operations.
    const field = kind === 'graphql-field';
    if (!field) for (const planned of this.defaults) byName.set(planned.policy.name, planned);
    for (const target of field ? [handler] : [classRef, handler]) {
      const seen = new Set<string>();
      for (const policy of declaredOn(target)) {
        const planned = this.plan(policy, where);
        if (seen.has(planned.policy.name)) {
          throw new RateLimitPolicyError('is declared twice on the same target; names must be unique per route', {
            policy: planned.policy.name,
            field: 'name',
            where,
          });
        }
        seen.add(planned.policy.name);
        byName.set(planned.policy.name, planned);
      }
    }
    if (classSkip === true || handlerSkip === true) byName.clear();
    for (const name of [
      ...(Array.isArray(classSkip) ? classSkip : []),
      ...(Array.isArray(handlerSkip) ? handlerSkip : []),
    ]) {
      byName.delete(name);
    }
    const policies = [...byName.values()].map((planned, order) => ({
      planned: planned.policy.source.scope === 'route' ? this.forRoute(planned, where) : planned,
      order,
    }));
    if (kind === 'rpc' || kind === 'rpc-event') checkRpcKeys(policies, where, this.options.hasUserOption);
    const late = policies.filter((p) => p.planned.key === 'user');
    const deferrable = kind === 'http' || kind === 'graphql' || kind === 'ws';
    const routeGuards = [classRef, handler].some(
      (target) =>
        (this.reflector.get<unknown[] | undefined>(GUARDS_METADATA_KEY as string, target as never)?.length ?? 0) > 0,
    );
    return {
      where,
      kind,
      policies,
      early: policies.filter((p) => p.planned.key !== 'user'),
      late,
      deferred: deferrable && late.length > 0 && routeGuards,
      lists:
        policies.length > 0 &&
        (this.options.moduleLists ||
          policies.some((p) => p.planned.allow !== undefined || p.planned.deny !== undefined)),
      counted: policies.some((p) => p.planned.count !== undefined),
    };
  }

  /** A route's own copy of a `scope: 'route'` policy: its state is kept under the route (RateLimitScope). */
  private forRoute(planned: PlannedPolicy, route: string): PlannedPolicy {
    const id = `${planned.policy.name}@${route}`;
    const known = this.named.get(id);
    if (known !== undefined && known.policy.id === `${planned.policy.id}@${route}`)
      return { ...planned, policy: known.policy };
    const policy = Object.freeze({ ...planned.policy, id: `${planned.policy.id}@${route}`, route });
    this.named.set(id, { policy, where: route });
    return { ...planned, policy };
  }

  /** A microservice message has no client address, and a user only where the `user` option reads one. */
  private plan(policy: RateLimitPolicy, where: string): PlannedPolicy {
    let resolved = validatePolicy(policy, where);
    const known = this.named.get(resolved.name);
    if (known === undefined) {
      this.named.set(resolved.name, { policy: resolved, where });
    } else if (!sameLimits(known.policy, resolved)) {
      // The same name with other limits replaces the earlier policy on this route; it keeps its own state.
      const { algorithm, limit, windowMs, capacity, anchor } = resolved;
      const anchored = anchor === undefined ? '' : `-${anchor}`;
      resolved = Object.freeze({
        ...resolved,
        id: `${resolved.name}~${algorithm}-${limit}-${windowMs}-${capacity}${anchored}`,
      });
    }
    // Validated above; compiled once per list (the same array planned on many routes is compiled once).
    const unexpected = (problem: string): never => {
      throw new RateLimitPolicyError(problem, { policy: resolved.name, where });
    };
    return {
      policy: resolved,
      limit: typeof policy.limit === 'function' ? policy.limit : undefined,
      burst: policy.algorithm !== 'quota' && typeof policy.burst === 'function' ? policy.burst : undefined,
      key: policy.key ?? 'user',
      explicitUser: policy.key === 'user',
      cost: policy.cost,
      failMode: policy.failMode ?? this.options.failMode,
      shadow: (policy.mode ?? this.options.mode) === 'shadow',
      count:
        policy.algorithm === 'concurrency'
          ? 'release'
          : policy.count === undefined || policy.count === 'all'
            ? undefined
            : policy.count,
      where,
      allow: compileList(policy.allow, unexpected),
      deny: compileList(policy.deny, unexpected),
    };
  }
}

/**
 * Whether the outcome of a counted handler needs its result (what it threw, when it completed): always
 * outside HTTP, where the result is the end. On HTTP the end is the response's, and its status says whether
 * the request succeeded (Nest's exception filters give what the handler threw its status): only a count
 * function, which is given the error too, needs the result. Nest builds an interceptor chain (an Observable
 * pipeline, about 30 µs of CPU per request) for every request of a handler with an interceptor: HTTP handlers
 * whose counted policies say 'failed', 'succeeded' or 'release' go without it.
 */
function needsResult(plan: RoutePlan, kind: HandlerKind): boolean {
  return kind !== 'http' || plan.policies.some(({ planned }) => typeof planned.count === 'function');
}
