import type { ModuleRef } from '@nestjs/core';

import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { PlanEntry, RoutePlan } from './route-plan.js';

/**
 * Declarations that a context could never enforce, found at start: each is an error naming `Class.method`.
 * A microservice message has no client address (no 'ip' key, no address lists) and no request user unless
 * the module's `user` option reads one.
 */
export function checkRpcKeys(policies: readonly PlanEntry[], where: string, hasUserOption: boolean): void {
  for (const { planned } of policies) {
    for (const field of ['allow', 'deny'] as const) {
      if (planned[field]?.hasAddresses !== true) continue;
      throw new RateLimitPolicyError(
        `lists client addresses on a microservice handler, which has no client address, so they could never match; use a function of the message (ctx.switchToRpc().getData())` +
          (planned.where === 'RateLimitModule defaults' ? ', or skip the policy here with @SkipRateLimit(name)' : ''),
        { policy: planned.policy.name, field, where },
      );
    }
    if (planned.key === 'ip') {
      throw new RateLimitPolicyError(
        "is keyed by 'ip' on a microservice handler, which has no client address; key it with a function of the message (ctx.switchToRpc().getData())",
        { policy: planned.policy.name, field: 'key', where },
      );
    }
    if (planned.key === 'user' && !hasUserOption) {
      throw new RateLimitPolicyError(
        "is keyed by 'user' (the default key) on a microservice handler: set the module's `user` option to read the user of RPC contexts, or key the policy with a function of the message" +
          (planned.where === 'RateLimitModule defaults' ? ', or skip it here with @SkipRateLimit(name)' : ''),
        { policy: planned.policy.name, field: 'key', where },
      );
    }
  }
}

/** Nest runs guards (and interceptors, which see outcomes) on GraphQL field resolvers only when told to. */
export function checkFieldEnhancers(plan: RoutePlan, moduleRef: ModuleRef): void {
  let enhancers: unknown;
  try {
    // The token under which @nestjs/graphql provides its module options.
    enhancers = moduleRef.get<{ fieldResolverEnhancers?: unknown }>('GqlModuleOptions', {
      strict: false,
    })?.fieldResolverEnhancers;
  } catch {
    enhancers = undefined;
  }
  const has = (enhancer: string): boolean => Array.isArray(enhancers) && enhancers.includes(enhancer);
  if (!has('guards')) {
    throw new RateLimitPolicyError(
      "is declared on a GraphQL field resolver, but Nest runs guards on field resolvers only with GraphQLModule's `fieldResolverEnhancers: ['guards']`; without it the policy would never apply",
      { policy: plan.policies[0]?.planned.policy.name, where: plan.where },
    );
  }
  const settled = plan.policies.find((p) => p.planned.policy.source.settle !== undefined);
  if (settled !== undefined && !has('interceptors')) {
    throw new RateLimitPolicyError(
      "settles its charge on a GraphQL field resolver, but Nest runs interceptors (which see the resolver's result) on field resolvers only with GraphQLModule's `fieldResolverEnhancers: ['guards', 'interceptors']`; without it the estimate would never be settled",
      { policy: settled.planned.policy.name, field: 'settle', where: plan.where },
    );
  }
  const counted = plan.policies.find((p) => p.planned.count !== undefined);
  if (counted !== undefined && !has('interceptors')) {
    throw new RateLimitPolicyError(
      `${counted.planned.count === 'release' ? 'limits concurrency' : 'counts by outcome'} on a GraphQL field resolver, but Nest runs interceptors (which see the resolver's outcome) on field resolvers only with GraphQLModule's \`fieldResolverEnhancers: ['guards', 'interceptors']\`; without it nothing would ever be ${counted.planned.count === 'release' ? 'released' : 'refunded'}`,
      {
        policy: counted.planned.policy.name,
        field: counted.planned.count === 'release' ? 'algorithm' : 'count',
        where: plan.where,
      },
    );
  }
}
