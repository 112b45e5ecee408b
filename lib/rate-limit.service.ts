import { Injectable } from '@nestjs/common';

import type { RateLimitDecision, RateLimitPolicy, ResolvedPolicy } from './policy/policy.types.js';
import { checkCost, validatePolicy } from './policy/validate-policy.js';
import { RateLimitPolicyError } from './policy/policy.errors.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * Rate limiting from your own code, on the module's store: for checks a decorator cannot express, such as
 * charging an AI call's estimated tokens before it runs and refunding the unused part after. A policy is
 * given as an object or by the name of one declared in `defaults` or any @RateLimit. Store failures and
 * timeouts are thrown (and reported through `onError`): the caller chooses what to do.
 * @example const d = await rateLimits.consume('ai-tokens', `user:${id}`, { cost: estimate });
 */
@Injectable()
export class RateLimitService {
  private readonly resolved = new WeakMap<RateLimitPolicy, ResolvedPolicy>();

  constructor(private readonly limiter: RateLimiter) {}

  /** Consumes `cost` (default 1) units of `policy` for `key`. */
  async consume(
    policy: RateLimitPolicy | string,
    key: string,
    opts: { cost?: number } = {},
  ): Promise<RateLimitDecision> {
    return (await this.consumeMany([{ policy, key, cost: opts.cost }]))[0];
  }

  /** Consumes several policies at once, all-or-nothing: when one denies, none is consumed. */
  async consumeMany(
    items: { policy: RateLimitPolicy | string; key: string; cost?: number }[],
  ): Promise<RateLimitDecision[]> {
    const resolved = items.map(({ policy, key, cost }) => {
      const p = this.resolve(policy);
      return { policy: p, key: this.checkKey(key, p), cost: this.checkAmount(cost ?? 1, p, 'cost') };
    });
    return this.limiter.call(
      resolved.map((i) => i.policy.name),
      () => this.limiter.store.consume(resolved),
    );
  }

  /** How `key` stands under `policy`, consuming nothing. */
  async peek(policy: RateLimitPolicy | string, key: string): Promise<RateLimitDecision> {
    const p = this.resolve(policy);
    const [decision] = await this.limiter.call([p.name], () =>
      this.limiter.store.peek([{ policy: p, key: this.checkKey(key, p) }]),
    );
    return decision;
  }

  /** Gives `amount` units back to `key` (never beyond the policy's capacity). */
  async refund(policy: RateLimitPolicy | string, key: string, amount: number): Promise<RateLimitDecision> {
    const p = this.resolve(policy);
    const item = { policy: p, key: this.checkKey(key, p), cost: this.checkAmount(amount, p, 'amount') };
    this.limiter.denyCache?.forget(p, item.key);
    const [decision] = await this.limiter.call([p.name], () => this.limiter.store.refund([item]));
    return decision;
  }

  /** Forgets everything `key` has consumed under `policy`. */
  async reset(policy: RateLimitPolicy | string, key: string): Promise<void> {
    const p = this.resolve(policy);
    this.limiter.denyCache?.forget(p, key);
    await this.limiter.call([p.name], () => this.limiter.store.reset([{ policy: p, key: this.checkKey(key, p) }]));
  }

  private resolve(policy: RateLimitPolicy | string): ResolvedPolicy {
    if (typeof policy === 'string') {
      const named = this.limiter.policyNamed(policy);
      if (named === undefined) {
        throw new RateLimitPolicyError(
          'no policy of that name is declared in `defaults` or any @RateLimit; pass the policy object instead',
          { policy, where: 'RateLimitService' },
        );
      }
      return named;
    }
    let resolved = this.resolved.get(policy);
    if (resolved === undefined) {
      resolved = validatePolicy(policy, 'RateLimitService');
      this.resolved.set(policy, resolved);
    }
    return resolved;
  }

  private checkKey(key: unknown, policy: ResolvedPolicy): string {
    if (typeof key !== 'string' || key === '') {
      throw new RateLimitPolicyError(`key must be a non-empty string, got ${JSON.stringify(key)}`, {
        policy: policy.name,
        field: 'key',
        where: 'RateLimitService',
      });
    }
    return key;
  }

  private checkAmount(amount: unknown, policy: ResolvedPolicy, field: string): number {
    return checkCost(amount, (problem) => {
      throw new RateLimitPolicyError(problem.replace('cost', field), {
        policy: policy.name,
        field,
        where: 'RateLimitService',
      });
    });
  }
}
