import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import type { RateLimitOverride, RateLimitOverrideChange } from '../policy/override.js';
import type { RateLimitDecision, RateLimitPolicy } from '../policy/policy.types.js';
import type { RateLimitReservation } from '../service/reservation.js';
import { type RateLimitServiceItem, ServiceCore } from '../service/service-core.js';
import { RateLimiter } from './rate-limiter.js';

/**
 * Rate limiting from your own code, on the module's store: for checks a decorator cannot express, such as
 * charging an AI call's estimated tokens before it runs and refunding the unused part after. A policy is
 * given as an object or by the name of one declared in `defaults` or any @RateLimit. Store failures and
 * timeouts are thrown (and reported through `onError`): the caller chooses what to do.
 * @example const d = await rateLimits.consume('ai-tokens', `user:${id}`, { cost: estimate });
 */
@Injectable()
export class RateLimitService implements OnModuleDestroy {
  /**
   * Does the work (lib/service/); this class gives it to Nest's injection. Its methods are async so that a bad
   * argument, which the core throws, rejects the promise they return rather than throwing.
   */
  private readonly core: ServiceCore;

  constructor(limiter: RateLimiter) {
    this.core = new ServiceCore(limiter);
  }

  /** Consumes `cost` (default 1) units of `policy` for `key`. */
  async consume(
    policy: RateLimitPolicy | string,
    key: string,
    opts: { cost?: number } = {},
  ): Promise<RateLimitDecision> {
    return this.core.consume(policy, key, opts.cost);
  }

  /**
   * Consumes several policies at once, all-or-nothing: when one denies, none is consumed. A policy in mode
   * 'shadow' never denies the others: its decision says whether it would have (and then it consumed nothing).
   */
  async consumeMany(items: readonly RateLimitServiceItem[]): Promise<RateLimitDecision[]> {
    return this.core.consumeMany(items);
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
    return this.core.reserve(items, opts.signal);
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
    return this.core.acquire(policy, key, opts);
  }

  /** Rejects the acquires still waiting (with RateLimitUnavailableException) rather than leave them hanging. */
  onModuleDestroy(): void {
    this.core.close();
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
    return this.core.peek(policy, key);
  }

  /** Gives `amount` units back to `key` (never beyond the policy's capacity). */
  async refund(policy: RateLimitPolicy | string, key: string, amount: number): Promise<RateLimitDecision> {
    return this.core.refund(policy, key, amount);
  }

  /**
   * Blocks `key` under `policy` for `durationMs` from now (a manual ban): its requests are denied until then,
   * Retry-After counting the block down, whatever the policy's own `block`; what it consumed stays counted.
   * @example await rateLimits.block('login-per-ip', 'ip:203.0.113.9', 3_600_000);
   */
  async block(policy: RateLimitPolicy | string, key: string, durationMs: number): Promise<void> {
    return this.core.block(policy, key, durationMs);
  }

  /** Lifts a block of `key` under `policy`, set by the policy's `block` or by block(). */
  async unblock(policy: RateLimitPolicy | string, key: string): Promise<void> {
    return this.core.unblock(policy, key);
  }

  /**
   * Removes all state of the module — every policy and key under its `keyPrefix`, blocks and quota usage
   * included — from each store it uses, and makes every instance's cache of denials forget; resolves with the
   * number of keys (Redis, memory) or rows (PostgreSQL) removed. For tests: Redis is scanned in small batches
   * (SCAN and UNLINK, every master of a Cluster), never blocked.
   * @example afterEach(() => app.get(RateLimitService).resetAll());
   */
  resetAll(): Promise<number> {
    return this.core.resetAll();
  }

  /**
   * Forgets everything `key` has consumed under `policy` (and its block). `key` is the identity the policy
   * counts by, as for peek(): `ip:<address>`, `user:<id>` or a key function's value; a `scope: 'route'` policy is
   * named with its route (`'login@AuthController.login'`). A name no `defaults` or `@RateLimit` declares is a
   * RateLimitPolicyError listing the declared ones.
   * @example await rateLimits.reset('per-user', 'user:42');
   */
  async reset(policy: RateLimitPolicy | string, key: string): Promise<void> {
    return this.core.reset(policy, key);
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
    return this.core.usage(policy, key, at);
  }

  /**
   * From now on, the decisions of the policy named `policy` for `identity` (the identity the policy counts by, as
   * for peek(): `ip:<address>`, `user:<id>` or a key function's value) use `change.limit` (and `change.burst`,
   * token bucket and GCRA) in place of the declared ones, on every instance within a second (the store's feed of
   * changes; the memory store: this process). The override is kept in the store, the identity as its keyed hash;
   * with `ttl` it lapses by itself then, without it lasts until removeOverride(). A new override of the same
   * policy and identity replaces the old one whole. What was counted stays counted: a raised limit admits the
   * difference at once, a lowered one denies until usage falls below it. With `shadow: true` decisions keep the
   * declared limits and each `onDecision` event tells what the override would have answered
   * (`override: { shadow: true, limit, allowed }`). Every change is logged once, with the identity's hash.
   * A name no `defaults` or `@RateLimit` declares, a field the policy's algorithm lacks, a limit that is not an
   * integer >= 1 and a bad `ttl` are RateLimitPolicyErrors that name them.
   * @example await rateLimits.override('per-tenant', 'tenant:acme', { limit: 10_000, ttl: '2h', reason: 'launch' });
   */
  async override(policy: string, identity: string, change: RateLimitOverrideChange): Promise<RateLimitOverride> {
    return this.core.overrides.override(policy, identity, change);
  }

  /** Removes the override of `identity` under `policy`, on every instance within a second; true when one was. */
  async removeOverride(policy: string, identity: string): Promise<boolean> {
    return this.core.overrides.removeOverride(policy, identity);
  }

  /** The overrides in force (of `policy` when given), as the store keeps them: identities as their hash. */
  async overrides(policy?: string): Promise<RateLimitOverride[]> {
    return this.core.overrides.overrides(policy);
  }
}
