import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import type { ServiceCalls } from '../engine/service-calls.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitDecision, RateLimitPolicy } from '../policy/policy.types.js';
import { checkAcquireOptions } from '../service/acquire-options.js';
import type { RateLimitReservation } from '../service/reservation.js';
import { blockOn, type ServiceArguments } from '../service/service-arguments.js';
import { elementAt } from '../util/element-at.js';
import { quotaUsage } from './quota-usage.js';
import { RateLimiter } from './rate-limiter.js';
import { ServiceDecisions } from './service-decisions.js';

/** An item of consumeMany and reserve: a policy (or its name), the key, and the cost (default 1). */
export interface RateLimitServiceItem {
  policy: RateLimitPolicy | string;
  key: string;
  cost?: number;
}

/**
 * Rate limiting from your own code, on the module's store: for checks a decorator cannot express, such as
 * charging an AI call's estimated tokens before it runs and refunding the unused part after. A policy is
 * given as an object or by the name of one declared in `defaults` or any @RateLimit. Store failures and
 * timeouts are thrown (and reported through `onError`): the caller chooses what to do.
 * @example const d = await rateLimits.consume('ai-tokens', `user:${id}`, { cost: estimate });
 */
@Injectable()
export class RateLimitService implements OnModuleDestroy {
  private readonly decisions: ServiceDecisions;
  private readonly args: ServiceArguments;
  private readonly calls: ServiceCalls;

  constructor(private readonly limiter: RateLimiter) {
    this.decisions = new ServiceDecisions(limiter);
    ({ args: this.args, calls: this.calls } = this.decisions);
  }

  /** Consumes `cost` (default 1) units of `policy` for `key`. */
  async consume(
    policy: RateLimitPolicy | string,
    key: string,
    opts: { cost?: number } = {},
  ): Promise<RateLimitDecision> {
    return elementAt(await this.consumeMany([{ policy, key, cost: opts.cost }]), 0, 'the decisions of a consume');
  }

  /**
   * Consumes several policies at once, all-or-nothing: when one denies, none is consumed. A policy in mode
   * 'shadow' never denies the others: its decision says whether it would have (and then it consumed nothing).
   */
  async consumeMany(items: readonly RateLimitServiceItem[]): Promise<RateLimitDecision[]> {
    return this.decisions.decide(this.decisions.resolve(items));
  }

  /**
   * Charges an estimate now, to settle at the actual cost once it is known: consumes the items as consumeMany
   * does (all-or-nothing) and returns a reservation with their decisions, `settle(actual)` and `cancel()`.
   * Settling gives back what the estimate exceeded, or charges the overrun without deciding (the key may go
   * into debt, which later requests wait out); cancelling gives everything back. Each is done once: a second
   * call, from any path, does nothing. An aborted `signal` cancels it (before any store call if already
   * aborted: then reserve rejects with `signal.reason`). A reservation an HTTP request leaves neither settled
   * nor cancelled when its response closes is settled at the estimate (the charge stays; a later call does
   * nothing) and reported once in the log. That is tracked from the second reserve() of the module on (the
   * first turns it on), for reservations made while an HTTP request is handled, from its middleware to its
   * response; not outside requests (jobs), nor in WebSockets or microservices. See docs/ai-endpoints.md.
   * @example const r = await rateLimits.reserve([{ policy: 'ai-tokens', key, cost: estimate }], { signal });
   */
  async reserve(
    items: readonly RateLimitServiceItem[],
    opts: { signal?: AbortSignal } = {},
  ): Promise<RateLimitReservation> {
    return this.decisions.reserve(items, opts.signal);
  }

  /**
   * Consumes `cost` (default 1) units like `consume`, but waits for them instead of being denied: resolves
   * with the allowed decision once they are consumed. Rejects with RateLimitExceededException when they
   * cannot be had within `maxWaitMs` (ms; 0 tries once) — at once when the store's `retryAfterMs` already
   * ends past it or is Infinity (a cost that can never fit); with `signal.reason` when aborted (before any
   * store call if already aborted); with the store's error, as `consume` does; with
   * RateLimitUnavailableException (503) when the module shuts down. The waiters of one policy and key in
   * this process take turns by `fairKey` (a tenant, say; `weight` its share, default 1), in units of cost:
   * one fair key's burst does not starve the others, and within one fair key (or without any) they are served
   * first come, first served. Only the first of them asks the store, again after each `retryAfterMs` (so one
   * call per key per retry-after from each process, and the store keeps the rate across processes).
   * docs/service.md, "Waiting instead of denying", has every edge case.
   * @example const d = await rateLimits.acquire('provider-tpm', 'openai', { cost: tokens, maxWaitMs: 30_000, fairKey: tenantId, signal });
   */
  async acquire(
    policy: RateLimitPolicy | string,
    key: string,
    opts: { cost?: number; maxWaitMs: number; signal?: AbortSignal; fairKey?: string; weight?: number },
  ): Promise<RateLimitDecision> {
    const p = this.args.policy(policy);
    const checked = this.args.key(key, p);
    const terms = checkAcquireOptions(opts, (field, problem) => {
      throw new RateLimitPolicyError(problem, { policy: p.name, field, where: 'RateLimitService' });
    });
    const cost = this.args.amount(opts.cost ?? 1, p, 'cost');
    return this.decisions.waiting.acquire({ policy: p, key: checked, cost, ...terms });
  }

  /** Rejects the acquires still waiting (with RateLimitUnavailableException) rather than leave them hanging. */
  onModuleDestroy(): void {
    this.decisions.waiting.close();
  }

  /**
   * How `key` stands under `policy`, consuming nothing. `key` is the identity the policy counts by, as a route's
   * requests make it: `ip:<address>` for `key: 'ip'` (IPv4 as it is, an IPv4-mapped address as IPv4, IPv6 as its
   * network: `ip:2001:db8:1:2::/64`), `user:<id>` for `key: 'user'` (or `ip:<address>` for a request with no
   * user), a key function's value as it returned it — never a bare address, which is another key with a full
   * budget. A name that no `defaults` or `@RateLimit` declares is a RateLimitPolicyError listing the declared ones.
   * @example const d = await rateLimits.peek('login-per-ip', 'ip:203.0.113.9'); // d.remaining
   */
  async peek(policy: RateLimitPolicy | string, key: string): Promise<RateLimitDecision> {
    const p = this.args.policy(policy);
    const item = { policy: p, key: this.args.key(key, p) };
    return elementAt(await this.calls.peek(item), 0, "the store's reply to peek");
  }

  /** Gives `amount` units back to `key` (never beyond the policy's capacity). */
  async refund(policy: RateLimitPolicy | string, key: string, amount: number): Promise<RateLimitDecision> {
    const p = this.args.policy(policy);
    const item = { policy: p, key: this.args.key(key, p), cost: this.args.amount(amount, p, 'amount') };
    const decisions = await this.calls.change([item], (store) => store.refund([item]), p);
    return elementAt(decisions, 0, "the store's reply to refund");
  }

  /**
   * Blocks `key` under `policy` for `durationMs` from now (a manual ban): its requests are denied until then,
   * Retry-After counting the block down, whatever the policy's own `block`; what it consumed stays counted.
   * @example await rateLimits.block('login-per-ip', 'ip:203.0.113.9', 3_600_000);
   */
  async block(policy: RateLimitPolicy | string, key: string, durationMs: number): Promise<void> {
    const p = this.args.lookup(policy);
    const item = { policy: p, key: this.args.key(key, p) };
    if (!Number.isSafeInteger(durationMs) || durationMs < 1) {
      throw new RateLimitPolicyError(
        `durationMs must be a whole number of milliseconds >= 1, got ${JSON.stringify(durationMs)}`,
        { policy: p.name, field: 'durationMs', where: 'RateLimitService' },
      );
    }
    await this.calls.change([item], (store) => blockOn(store, p).block([item], durationMs), p);
  }

  /** Lifts a block of `key` under `policy`, set by the policy's `block` or by block(). */
  async unblock(policy: RateLimitPolicy | string, key: string): Promise<void> {
    const p = this.args.lookup(policy);
    const item = { policy: p, key: this.args.key(key, p) };
    await this.calls.change([item], (store) => blockOn(store, p).unblock([item]), p);
  }

  /**
   * Removes all state of the module — every policy and key under its `keyPrefix`, blocks and quota usage
   * included — from each store it uses, and makes every instance's cache of denials forget; resolves with the
   * number of keys (Redis, memory) or rows (PostgreSQL) removed. For tests: Redis is scanned in small batches
   * (SCAN and UNLINK, every master of a Cluster), never blocked.
   * @example afterEach(() => app.get(RateLimitService).resetAll());
   */
  resetAll(): Promise<number> {
    return this.calls.resetAll();
  }

  /**
   * Forgets everything `key` has consumed under `policy` (and its block). `key` is the identity the policy
   * counts by, as for peek(): `ip:<address>`, `user:<id>` or a key function's value; a `scope: 'route'` policy is
   * named with its route (`'login@AuthController.login'`). A name no `defaults` or `@RateLimit` declares is a
   * RateLimitPolicyError listing the declared ones.
   * @example await rateLimits.reset('per-user', 'user:42');
   */
  async reset(policy: RateLimitPolicy | string, key: string): Promise<void> {
    const p = this.args.policy(policy);
    const item = { policy: p, key: this.args.key(key, p) };
    await this.calls.change([item], (store) => store.reset([item]), p);
  }

  /**
   * How much of a quota `key` has used in the calendar period that holds `at` (default now), for billing.
   * With `postgres`, read from the durable table for any period; on the memory or Redis store, only the
   * current period is known (an earlier one reads as 0). `limit` is the policy's limit when it is a number;
   * for a limit that depends on the request (plans), the limit the last decision applied when the store keeps
   * it (PostgreSQL), else `undefined` (the memory and Redis stores do not know it) — never NaN.
   * @example const { used, limit, periodStart } = await rateLimits.usage('ai-monthly', 'user:42');
   */
  async usage(
    policy: RateLimitPolicy | string,
    key: string,
    at?: Date,
  ): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
    return quotaUsage(this.limiter.engine, this.decisions, this.args.policy(policy, true), key, at);
  }
}
