import type { RoutePlanner } from '../planning/route-planner.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import { validatePolicy } from '../policy/validate-policy.js';
import { checkCost } from '../policy/value-checks.js';

/** How many declared names an error about an undeclared one lists. */
const DECLARED_NAMES_SHOWN = 20;

/** The arguments of RateLimitService's methods, checked: a bad one is a RateLimitPolicyError that says what. */
export class ServiceArguments {
  private readonly resolved = new WeakMap<RateLimitPolicy, ResolvedPolicy>();

  constructor(private readonly planner: RoutePlanner) {}

  /** A policy the service decides on: one whose limit is a function of the request is refused (lookup takes it). */
  policy(policy: RateLimitPolicy | string): ResolvedPolicy {
    const resolved = this.lookup(policy);
    if (Number.isNaN(resolved.limit) || Number.isNaN(resolved.capacity)) {
      const field = Number.isNaN(resolved.limit) ? 'limit' : 'burst';
      throw new RateLimitPolicyError(
        `has a ${field} that depends on the request; RateLimitService needs a number: pass the policy object with a numeric ${field} (the same name shares the state)`,
        { policy: resolved.name, field, where: 'RateLimitService' },
      );
    }
    return resolved;
  }

  /** A policy by name (declared in `defaults` or any @RateLimit) or as an object, validated once. */
  lookup(policy: RateLimitPolicy | string): ResolvedPolicy {
    if (typeof policy === 'string') {
      const named = this.planner.policyNamed(policy);
      if (named === undefined) {
        throw new RateLimitPolicyError(
          `no policy of that name is declared in \`defaults\` or any @RateLimit: ${this.declaredNames()}. ` +
            'A guess would read or change a state no request counts under; for a policy only your code ' +
            "charges, pass the policy object (a policy of scope 'route' is named with its route, as " +
            "'name@Class.method')",
          { policy, where: 'RateLimitService' },
        );
      }
      return unscoped(named);
    }
    let resolved = this.resolved.get(policy);
    if (resolved === undefined) {
      resolved = unscoped(validatePolicy(policy, 'RateLimitService'));
      this.resolved.set(policy, resolved);
    }
    return resolved;
  }

  /**
   * The names lookup() takes, for an error: each declared name, a `scope: 'route'` policy as `name@Class.method`
   * (its bare name is refused), sorted; the first few when there are many.
   */
  private declaredNames(): string {
    const names = [...this.planner.declared()]
      .filter(({ policy }) => policy.source.scope !== 'route' || policy.route !== undefined)
      .map(({ policy }) => JSON.stringify(policy.route === undefined ? policy.name : `${policy.name}@${policy.route}`))
      .sort();
    if (names.length === 0) return 'none is declared';
    const shown = names.slice(0, DECLARED_NAMES_SHOWN).join(', ');
    const more = names.length - DECLARED_NAMES_SHOWN;
    return `the declared names are ${shown}${more > 0 ? ` and ${more} more` : ''}`;
  }

  /** A key: a non-empty string. */
  key(key: unknown, policy: ResolvedPolicy): string {
    if (typeof key !== 'string' || key === '') {
      throw new RateLimitPolicyError(`key must be a non-empty string, got ${JSON.stringify(key)}`, {
        policy: policy.name,
        field: 'key',
        where: 'RateLimitService',
      });
    }
    return key;
  }

  /** A duration (of a block): a whole number of milliseconds >= 1. */
  duration(durationMs: unknown, policy: ResolvedPolicy): number {
    if (typeof durationMs !== 'number' || !Number.isSafeInteger(durationMs) || durationMs < 1) {
      throw new RateLimitPolicyError(
        `durationMs must be a whole number of milliseconds >= 1, got ${JSON.stringify(durationMs)}`,
        { policy: policy.name, field: 'durationMs', where: 'RateLimitService' },
      );
    }
    return durationMs;
  }

  /** A cost or an amount: a non-negative integer. */
  amount(amount: unknown, policy: ResolvedPolicy, field: string): number {
    return checkCost(amount, (problem) => {
      throw new RateLimitPolicyError(problem.replace('cost', field), {
        policy: policy.name,
        field,
        where: 'RateLimitService',
      });
    });
  }
}

/**
 * A reservation's actual costs (settle's argument): one number for every item, or an array of one per item,
 * each a non-negative integer. A bad one is a RateLimitPolicyError naming the item's policy and `actual`.
 */
export function checkActuals(
  args: ServiceArguments,
  actual: unknown,
  items: readonly { policy: ResolvedPolicy }[],
): number[] {
  if (Array.isArray(actual) && actual.length !== items.length) {
    throw new RateLimitPolicyError(
      `settle() takes one number, or an array of one per item (${items.length}), got an array of ${actual.length}`,
      { policy: items[0]?.policy.name ?? '(none)', field: 'actual', where: 'RateLimitService' },
    );
  }
  return items.map(({ policy }, i) => args.amount(Array.isArray(actual) ? actual[i] : actual, policy, 'actual'));
}

/** A policy of scope 'route' has one budget per route: the service must be told whose (by name). */
function unscoped(policy: ResolvedPolicy): ResolvedPolicy {
  if (policy.source.scope !== 'route' || policy.route !== undefined) return policy;
  throw new RateLimitPolicyError(
    "has scope 'route': each route has its own budget; name the route's, as 'name@Class.method'",
    { policy: policy.name, field: 'scope', where: 'RateLimitService' },
  );
}
