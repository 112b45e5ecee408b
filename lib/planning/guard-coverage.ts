import { UseInterceptors } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, type DiscoveryService, type ModuleRef, type Reflector } from '@nestjs/core';

import { RateLimitPolicyError } from '../policy/policy.errors.js';
import { GUARDS_METADATA_KEY, metadataKeyOf } from './handler-kinds.js';
import type { RoutePlan } from './route-plan.js';

/**
 * The mark of what decides invocations when an application places it (RateLimitGuard, RateLimitInterceptor
 * and their subclasses), set on their prototypes. A mark rather than `instanceof`: this file is imported by
 * the planner, which the guard's own module imports, and a class imported back here would be a cycle.
 */
export const DECIDES = Symbol('nest-rate-limit:decides');

/** Whether a guard or interceptor, as Nest holds it (a class, or an instance), is one of the limiter's. */
function decides(enhancer: unknown): boolean {
  if (typeof enhancer === 'function') return (enhancer.prototype as Record<symbol, unknown>)?.[DECIDES] === true;
  return typeof enhancer === 'object' && enhancer !== null && (enhancer as Record<symbol, unknown>)[DECIDES] === true;
}

const INTERCEPTORS_METADATA_KEY = metadataKeyOf(UseInterceptors, 'UseInterceptors');

/**
 * Whether a guard or interceptor of the limiter is on the handler or its class (@UseGuards(RateLimitGuard),
 * @UseInterceptors(RateLimitInterceptor), subclasses included; a class's metadata is inherited by subclasses).
 */
export function coveredByDecorators(reflector: Reflector, classRef: object, handler: object): boolean {
  for (const key of [GUARDS_METADATA_KEY, INTERCEPTORS_METADATA_KEY]) {
    for (const target of [classRef, handler]) {
      const enhancers = reflector.get<unknown[] | undefined>(key as string, target as never);
      if (enhancers?.some(decides) === true) return true;
    }
  }
  return false;
}

/** What an application's global enhancers are, as far as Nest's container tells (useGlobalGuards included). */
interface GlobalEnhancers {
  getGlobalGuards(): unknown[];
  getGlobalInterceptors(): unknown[];
  getGlobalRequestGuards?(): { metatype?: unknown }[];
  getGlobalRequestInterceptors?(): { metatype?: unknown }[];
}

/**
 * Whether a guard or interceptor of the limiter is global: an APP_GUARD or APP_INTERCEPTOR provider (found
 * through discovery), or given to `app.useGlobalGuards()` / `useGlobalInterceptors()` (read from the
 * application's configuration, which Nest's container holds; when a Nest version hides it, the providers
 * alone count). Read once the application's providers are applied, before the hooks of `app.init()`.
 */
export function coveredGlobally(discovery: DiscoveryService, moduleRef: ModuleRef): boolean {
  for (const wrapper of discovery.getProviders()) {
    const token = typeof wrapper.token === 'string' ? wrapper.token : '';
    if (!token.startsWith(APP_GUARD) && !token.startsWith(APP_INTERCEPTOR)) continue;
    if (decides(wrapper.instance) || decides(wrapper.metatype)) return true;
  }
  const config = (moduleRef as unknown as { container?: { applicationConfig?: Partial<GlobalEnhancers> } }).container
    ?.applicationConfig;
  const all = [
    ...(config?.getGlobalGuards?.() ?? []),
    ...(config?.getGlobalInterceptors?.() ?? []),
    ...(config?.getGlobalRequestGuards?.() ?? []).map((w) => w.metatype),
    ...(config?.getGlobalRequestInterceptors?.() ?? []).map((w) => w.metatype),
  ];
  return all.some(decides);
}

/** A policy only RateLimitService charges: declared with `cost: 0`, so no guard needs to decide it. */
const serviceOnly = (plan: RoutePlan): boolean => plan.policies.every(({ planned }) => planned.cost === 0);

/** Whether a handler with policies needs a guard of the limiter that `global: false` leaves to the app. */
export const needsGuard = (plan: RoutePlan): boolean => plan.policies.length > 0 && !serviceOnly(plan);

/**
 * With `global: false`, handlers with policies that no guard or interceptor of the limiter covers: the start
 * stops, naming them, since their limits would silently never apply.
 */
export function refuseUnguarded(unguarded: readonly RoutePlan[]): void {
  const [first] = unguarded;
  if (first === undefined) return;
  const names = (plan: RoutePlan) => plan.policies.map(({ planned }) => `"${planned.policy.name}"`).join(', ');
  const others = unguarded.slice(1, 6).map((plan) => `${plan.where} (${names(plan)})`);
  const more = unguarded.length > 6 ? `, and ${unguarded.length - 6} more` : '';
  throw new RateLimitPolicyError(
    `would never apply: with \`global: false\`, no RateLimitGuard covers ${first.where}` +
      (others.length > 0 ? ` (nor ${others.join(', ')}${more})` : '') +
      '. Add @UseGuards(RateLimitGuard) to the class or the handler (after your authentication guard), ' +
      'or set `global: true`',
    { policy: first.policies[0]?.planned.policy.name, where: first.where },
  );
}
