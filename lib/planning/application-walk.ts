import type { DiscoveryService, MetadataScanner, ModuleRef, Reflector } from '@nestjs/core';

import { nameOf } from '../util/handler-label.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitPolicy } from '../policy/policy.types.js';
import { RATE_LIMIT_POLICIES } from './metadata-keys.js';
import { checkFieldEnhancers } from './context-checks.js';
import { coveredByDecorators, needsGuard } from './guard-coverage.js';
import { contextOf, type ContextType, type HandlerKind, handlerKindOf } from './handler-kinds.js';
import type { GuardedHandler, PlannedApplication, RoutePlan } from './route-plan.js';

/** What the walk needs of Nest and of the planner. */
export interface ApplicationWalk {
  readonly discovery: DiscoveryService;
  readonly scanner: MetadataScanner;
  /** Reads the GraphQL module's options (checkFieldEnhancers). */
  readonly moduleRef: ModuleRef;
  readonly reflector: Reflector;
  /** `global: false`: the handlers with policies need a guard of their own. */
  readonly guardsPlaced: boolean;
  /** The plan of one handler (RoutePlanner.planFor). */
  readonly planFor: (classRef: object, handler: object, method: string, kind: HandlerKind) => RoutePlan;
}

/**
 * Plans every handler of the application — controllers (HTTP routes and microservice handlers) and providers
 * (GraphQL resolvers, WebSocket gateways) — so that a bad declaration stops the start, and collects what the
 * limiter wires from the plans: the contexts present, the handlers deferred, counted, settled, guarded by the limiter
 * itself (microservices, gateways), or unguarded.
 */
export function walkApplication(walk: ApplicationWalk): PlannedApplication {
  const contexts = new Set<ContextType>();
  const deferred: { prototype: object; method: string }[] = [];
  const guarded: GuardedHandler[] = [];
  const counted: { prototype: object; method: string }[] = [];
  const settled: { prototype: object; method: string }[] = [];
  const outsideHttp: { classRef: object; prototype: object; method: string }[] = [];
  const unguarded: RoutePlan[] = [];
  const seen = new Set<unknown>();
  const controllers = walk.discovery.getControllers();
  const classes = [
    ...controllers.map((w) => ({ metatype: w.metatype, controller: true })),
    ...walk.discovery.getProviders().map((w) => ({ metatype: w.metatype, controller: false })),
  ];
  for (const { metatype, controller } of classes) {
    if (typeof metatype !== 'function' || seen.has(metatype)) continue;
    seen.add(metatype);
    const prototype = metatype.prototype as Record<string, unknown> | undefined;
    if (prototype === undefined) continue;
    let handlers = 0;
    for (const method of walk.scanner.getAllMethodNames(prototype)) {
      const handler = prototype[method];
      if (typeof handler !== 'function') continue;
      const kind = handlerKindOf(metatype, handler, controller);
      const plan = walk.planFor(metatype, handler, method, kind);
      if (kind === 'none') continue;
      handlers++;
      contexts.add(contextOf(kind));
      if (kind === 'graphql-field' && plan.policies.length > 0) checkFieldEnhancers(plan, walk.moduleRef);
      if (plan.deferred) deferred.push({ prototype, method });
      if (plan.counted && needsResult(plan, kind)) counted.push({ prototype, method });
      if (plan.settled) settled.push({ prototype, method });
      if (kind !== 'http' && kind !== 'graphql-field') outsideHttp.push({ classRef: metatype, prototype, method });
      const context = contextOf(kind);
      if ((context === 'rpc' || context === 'ws') && plan.policies.length > 0) {
        guarded.push({ context, classRef: metatype, prototype, method });
      }
      if (walk.guardsPlaced && needsGuard(plan) && !coveredByDecorators(walk.reflector, metatype, handler)) {
        unguarded.push(plan);
      }
    }
    if (handlers === 0 && !controller) refuseClassPolicies(walk.reflector, metatype);
  }
  if (controllers.length > 0) contexts.add('http');
  return { contexts, deferred, guarded, counted, settled, outsideHttp, unguarded };
}

/** Policies on a class Nest calls no handler of (not a controller, resolver or gateway) would never apply. */
function refuseClassPolicies(reflector: Reflector, metatype: object): void {
  const classPolicies = reflector.get<RateLimitPolicy[] | undefined>(RATE_LIMIT_POLICIES, metatype as never);
  if ((classPolicies?.length ?? 0) === 0) return;
  throw new RateLimitPolicyError(
    'is declared on a class Nest calls no handler of (not a controller, resolver or gateway); it would never apply',
    { policy: classPolicies?.[0]?.name, where: nameOf(metatype, 'class') },
  );
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
