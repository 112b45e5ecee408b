import type { DiscoveryService, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';

import { handlerLabel } from '../util/handler-label.js';
import { type Criticality, isCriticality } from '../policy/criticality.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import { RATE_LIMIT_CRITICALITY, RATE_LIMIT_POLICIES, RATE_LIMIT_SKIP } from './metadata-keys.js';
import { walkApplication } from './application-walk.js';
import { checkRpcKeys } from './context-checks.js';
import { DeclaredPolicies } from './declared-policies.js';
import { GUARDS_METADATA_KEY, type HandlerKind } from './handler-kinds.js';
import {
  NO_POLICIES,
  type PlannedApplication,
  type PlannedPolicy,
  type RoutePlan,
  type RoutePlannerOptions,
} from './route-plan.js';

export type { PlanEntry, PlannedApplication, PlannedPolicy, RoutePlan, RoutePlannerOptions } from './route-plan.js';

/**
 * Route planning: merges the policies each handler gets (defaults, class, handler; same name replaces; skips
 * remove), validates them, and keeps one plan per (class, handler). Every handler is planned at start
 * (walk(), application-walk.ts); a declaration that would never be enforced is an error naming `Class.method`.
 */
export class RoutePlanner {
  /** By class then handler: a handler inherited from a base class is one function shared by subclasses. */
  private readonly plans = new WeakMap<object, Map<object, RoutePlan>>();
  private readonly policies: DeclaredPolicies;
  private readonly defaults: readonly PlannedPolicy[];

  constructor(
    private readonly options: RoutePlannerOptions,
    private readonly reflector: Reflector,
  ) {
    this.policies = new DeclaredPolicies(options);
    this.defaults = options.defaults.map((p) => this.policies.plan(p, 'RateLimitModule defaults'));
  }

  /** Every policy declared anywhere, by name (RateLimitService looks policies up by name). */
  policyNamed(name: string): ResolvedPolicy | undefined {
    return this.policies.get(name);
  }

  /** Every declared policy, with where it was first declared. */
  declared(): IterableIterator<{ policy: ResolvedPolicy; where: string }> {
    return this.policies.values();
  }

  /**
   * Plans every handler of the application, so that a bad declaration stops the start. `moduleRef` reads
   * the GraphQL module's options: guards run on field resolvers only with `fieldResolverEnhancers: ['guards']`.
   */
  walk(discovery: DiscoveryService, scanner: MetadataScanner, moduleRef: ModuleRef): PlannedApplication {
    return walkApplication({
      discovery,
      scanner,
      moduleRef,
      reflector: this.reflector,
      guardsPlaced: this.options.guardsPlaced,
      planFor: (classRef, handler, method, kind) => this.planFor(classRef, handler, method, kind),
    });
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
    if (kind === 'none') {
      if (Reflect.getOwnMetadata(RATE_LIMIT_POLICIES, handler) !== undefined) {
        throw new RateLimitPolicyError(
          'is declared on a method Nest never calls as a handler (not a route, resolver, gateway message or microservice handler); it would never apply',
          { policy: this.declaredOn(handler)[0]?.name, where },
        );
      }
      return NO_POLICIES;
    }
    const policies = [...this.merged(classRef, handler, kind, where)].map((planned, order) => ({
      planned: planned.policy.source.scope === 'route' ? this.policies.forRoute(planned, where) : planned,
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
      settled: policies.some((p) => p.planned.policy.source.settle !== undefined),
      criticality: this.criticalityOf(classRef, handler, where),
    };
  }

  /** `@Criticality` of the handler, else of its class, else 'default'; any other value stops the start. */
  private criticalityOf(classRef: object, handler: object, where: string): Criticality {
    const declared = this.reflector.getAllAndOverride<unknown>(RATE_LIMIT_CRITICALITY, [
      handler as never,
      classRef as never,
    ]);
    if (declared === undefined) return 'default';
    if (isCriticality(declared)) return declared;
    throw new TypeError(
      `nest-rate-limit: @Criticality on ${where} must be 'critical', 'default' or 'sheddable', got ${JSON.stringify(declared)}`,
    );
  }

  /**
   * The policies a handler gets, in order: the module's defaults, its class's, its own (the same name replaces
   * the earlier one), less what `@SkipRateLimit` on the class or the handler removes. A field resolver gets
   * only its own policies: defaults and its class's are for the root operations.
   */
  private merged(classRef: object, handler: object, kind: HandlerKind, where: string): Iterable<PlannedPolicy> {
    const byName = new Map<string, PlannedPolicy>();
    const field = kind === 'graphql-field';
    if (!field) for (const planned of this.defaults) byName.set(planned.policy.name, planned);
    for (const target of field ? [handler] : [classRef, handler]) {
      const seen = new Set<string>();
      for (const policy of this.declaredOn(target)) {
        const planned = this.policies.plan(policy, where);
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
    const skipOf = (target: object) =>
      this.reflector.get<true | string[] | undefined>(RATE_LIMIT_SKIP, target as never);
    const classSkip = skipOf(classRef);
    const handlerSkip = skipOf(handler);
    if (classSkip === true || handlerSkip === true) byName.clear();
    for (const name of [
      ...(Array.isArray(classSkip) ? classSkip : []),
      ...(Array.isArray(handlerSkip) ? handlerSkip : []),
    ]) {
      byName.delete(name);
    }
    return byName.values();
  }

  /** The policies `@RateLimit` declared on a class or a handler. */
  private declaredOn(target: object): RateLimitPolicy[] {
    return this.reflector.get<RateLimitPolicy[] | undefined>(RATE_LIMIT_POLICIES, target as never) ?? [];
  }
}
