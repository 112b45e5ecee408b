import type { ResolvedPolicy } from '../policy/policy.types.js';

/** Variants of a policy kept at once; beyond them a variant is made per request (a plan per tenant, say). */
const MOST_VARIANTS = 1000;

/**
 * Policies with a request's limit and burst (functions of the request: the caller's plan), made once per
 * pair of values. The variants share the policy's id, so its state: a key whose plan changes is decided
 * from the units it already used.
 */
export class LimitVariants {
  private readonly byPolicy = new WeakMap<ResolvedPolicy, Map<string, ResolvedPolicy>>();

  of(policy: ResolvedPolicy, limit: number, burst?: number): ResolvedPolicy {
    const bucket = policy.algorithm === 'token-bucket' || policy.algorithm === 'gcra';
    const staticBurst = typeof policy.source.burst === 'number' ? policy.source.burst : undefined;
    const capacity = bucket ? (burst ?? staticBurst ?? limit) : limit;
    let byLimit = this.byPolicy.get(policy);
    if (byLimit === undefined) this.byPolicy.set(policy, (byLimit = new Map()));
    const id = `${limit}/${capacity}`;
    let variant = byLimit.get(id);
    if (variant === undefined) {
      variant = Object.freeze({ ...policy, limit, capacity });
      if (byLimit.size < MOST_VARIANTS) byLimit.set(id, variant);
    }
    return variant;
  }
}
