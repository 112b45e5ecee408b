import { compileList } from '../lists/address-list.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import { validatePolicy } from '../policy/validate-policy.js';
import type { PlannedPolicy, RoutePlannerOptions } from './route-plan.js';

/** Same limits: a limit that is a function of the request (NaN here) is the same as another such. */
function sameLimits(a: ResolvedPolicy, b: ResolvedPolicy): boolean {
  return (
    a.shape === b.shape &&
    a.algorithm === b.algorithm &&
    Object.is(a.limit, b.limit) &&
    Object.is(a.capacity, b.capacity)
  );
}

/**
 * Every policy the application declares, by name: each declaration validated and planned with the module's
 * defaults, the ids that keep apart the states of policies that share a name but not their limits, and the
 * per-route copies of `scope: 'route'` policies. RateLimitService looks policies up here by name.
 */
export class DeclaredPolicies {
  private readonly named = new Map<string, { policy: ResolvedPolicy; where: string }>();

  constructor(private readonly options: Pick<RoutePlannerOptions, 'failMode' | 'mode' | 'key'>) {}

  /** The policy declared under `name` (first declaration), or the route copy under `name@route`. */
  get(name: string): ResolvedPolicy | undefined {
    return this.named.get(name)?.policy;
  }

  /** Every declared policy, with where it was first declared. */
  values(): IterableIterator<{ policy: ResolvedPolicy; where: string }> {
    return this.named.values();
  }

  /**
   * A declaration at `where`, validated and completed with the module's fail mode and mode. The same name with
   * other limits than its first declaration gets an id of its own, so a state of its own.
   */
  plan(policy: RateLimitPolicy, where: string): PlannedPolicy {
    let resolved = validatePolicy(policy, where);
    const known = this.named.get(resolved.name);
    if (known === undefined) {
      this.named.set(resolved.name, { policy: resolved, where });
    } else if (!sameLimits(known.policy, resolved)) {
      // The same name with other limits replaces the earlier policy on this route; it keeps its own state.
      const { shape, limit, capacity } = resolved;
      resolved = Object.freeze({ ...resolved, id: `${resolved.name}~${shape}-${limit}-${capacity}` });
    }
    // Validated above; compiled once per list (the same array planned on many routes is compiled once).
    const unexpected = (problem: string): never => {
      throw new RateLimitPolicyError(problem, { policy: resolved.name, where });
    };
    const failMode = policy.failMode ?? this.options.failMode;
    if (resolved.localLimit !== undefined && failMode !== 'local') {
      throw new RateLimitPolicyError(
        `applies only with failMode 'local', and the module's failMode is '${failMode}': set failMode: 'local' on ` +
          'the policy (or the module), or remove localLimit',
        { policy: resolved.name, field: 'localLimit', where },
      );
    }
    return {
      policy: resolved,
      limit: typeof policy.limit === 'function' ? policy.limit : undefined,
      burst: policy.algorithm !== 'quota' && typeof policy.burst === 'function' ? policy.burst : undefined,
      key: policy.key ?? this.options.key ?? 'user',
      // A 'user' the policy or the module names claims a limit per account (the built-in default claims nothing).
      explicitUser: (policy.key ?? this.options.key) === 'user',
      cost: policy.cost,
      failMode,
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

  /** A route's own copy of a `scope: 'route'` policy: its state is kept under the route (RateLimitScope). */
  forRoute(planned: PlannedPolicy, route: string): PlannedPolicy {
    const id = `${planned.policy.name}@${route}`;
    const known = this.named.get(id);
    if (known !== undefined && known.policy.id === `${planned.policy.id}@${route}`)
      return { ...planned, policy: known.policy };
    const policy = Object.freeze({ ...planned.policy, id: `${planned.policy.id}@${route}`, route });
    this.named.set(id, { policy, where: route });
    return { ...planned, policy };
  }
}
