import { Injectable, type OnModuleDestroy } from '@nestjs/common';

import { quotaPeriodAt } from '../algorithms/quota/quota-period.js';
import { elementAt } from '../util/element-at.js';
import { ServiceCalls } from '../engine/service-calls.js';

import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitDecision, RateLimitPolicy } from '../policy/policy.types.js';
import { RateLimiter } from './rate-limiter.js';
import { checkAcquireOptions } from '../service/acquire-options.js';
import { AcquireQueues } from '../service/acquire-queue.js';
import {
  type RateLimitReservation,
  Reservation,
  type ReservationStore,
  type ReservedItem,
} from '../service/reservation.js';
import { blockOn, checkActuals, ServiceArguments } from '../service/service-arguments.js';

/** An item of consumeMany and reserve: a policy (or its name), the key, and the cost (default 1). */
export interface RateLimitServiceItem {
  policy: RateLimitPolicy | string;
  key: string;
  cost?: number;
}

/** Read through a function: TypeScript would keep `aborted` narrowed to false across an await. */
const isAborted = (signal: AbortSignal | undefined): signal is AbortSignal => signal?.aborted === true;

/** A quota limit no usage reaches, to read usage through peek: 2^52. */
const USAGE_PROBE_LIMIT = 2 ** 52;

/**
 * Rate limiting from your own code, on the module's store: for checks a decorator cannot express, such as
 * charging an AI call's estimated tokens before it runs and refunding the unused part after. A policy is
 * given as an object or by the name of one declared in `defaults` or any @RateLimit. Store failures and
 * timeouts are thrown (and reported through `onError`): the caller chooses what to do.
 * @example const d = await rateLimits.consume('ai-tokens', `user:${id}`, { cost: estimate });
 */
@Injectable()
export class RateLimitService implements OnModuleDestroy {
  /** The waiters of acquire(): they consume and give back on the same path as consume() and refund(). */
  private readonly waiting = new AcquireQueues({
    consume: async (item) => {
      const decisions = await this.calls.call([item.policy.name], () => this.limiter.engine.consumeAcross([item]));
      const decision = elementAt(decisions, 0, 'the decisions of a consume');
      this.limiter.events.report([[item, decision]], undefined);
      return decision;
    },
    refund: (item) => this.calls.change([item], (store) => store.refund([item]), item.policy),
  });

  /** What reservations settle and cancel through: refunds and charges on each item's store. */
  private readonly stores: ReservationStore = {
    refund: (items) =>
      this.calls.eachStore(items, (part, policy) => this.calls.change(part, (store) => store.refund(part), policy)),
    charge: (items) => this.calls.eachStore(items, (part, policy) => this.calls.charge(part, policy)),
    now: () => this.limiter.engine.now(),
  };

  private readonly args: ServiceArguments;
  private readonly calls: ServiceCalls;

  constructor(private readonly limiter: RateLimiter) {
    this.args = new ServiceArguments(limiter.planner);
    this.calls = new ServiceCalls(limiter.engine);
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
    return this.decide(this.resolve(items));
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
    const { signal } = opts;
    const resolved = this.resolve(items);
    if (signal?.aborted === true) throw signal.reason;
    const decisions = await this.decide(resolved);
    const check = (actual: unknown) => checkActuals(this.args, actual, resolved);
    const reservation = new Reservation(resolved, decisions, this.stores, check, signal);
    // Aborted while the store call was on its way: what it took goes back.
    if (reservation.allowed && isAborted(signal)) {
      await reservation.cancel();
      throw signal.reason;
    }
    this.limiter.scopes.track(reservation);
    return reservation;
  }

  /** Each item's policy, key and cost checked, and whether it is in shadow mode. */
  private resolve(items: readonly RateLimitServiceItem[]): ReservedItem[] {
    return items.map(({ policy, key, cost }) => {
      const p = this.args.policy(policy);
      const shadow = (p.mode ?? this.limiter.options.mode) === 'shadow';
      return { policy: p, key: this.args.key(key, p), cost: this.args.amount(cost ?? 1, p, 'cost'), shadow };
    });
  }

  /** One all-or-nothing decision of the items, reported to onDecision and the metrics. */
  private async decide(resolved: readonly ReservedItem[]): Promise<RateLimitDecision[]> {
    const decisions = await this.calls.call(
      resolved.map((i) => i.policy.name),
      () => this.limiter.engine.consumeAcross(resolved),
    );
    this.limiter.events.report(
      resolved.map((item, i) => [item, elementAt(decisions, i, 'the decisions of a consume')] as const),
      undefined,
    );
    return decisions;
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
    return this.waiting.acquire({ policy: p, key: checked, cost, ...terms });
  }

  /** Rejects the acquires still waiting (with RateLimitUnavailableException) rather than leave them hanging. */
  onModuleDestroy(): void {
    this.waiting.close();
  }

  /** How `key` stands under `policy`, consuming nothing. */
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

  /** Forgets everything `key` has consumed under `policy`. */
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
    const p = this.args.policy(policy, true);
    if (p.quota === undefined) {
      throw new RateLimitPolicyError('usage() is for quota policies (algorithm: "quota")', {
        policy: p.name,
        field: 'algorithm',
        where: 'RateLimitService',
      });
    }
    const checked = this.args.key(key, p);
    const nowMs = this.limiter.engine.now();
    const atMs = at?.getTime() ?? nowMs;
    if (!Number.isFinite(atMs)) {
      throw new RateLimitPolicyError(`at must be a valid Date, got ${String(at)}`, {
        policy: p.name,
        where: 'RateLimitService',
      });
    }
    const { startMs, endMs } = quotaPeriodAt(p.quota.period, p.quota.timeZone, atMs);
    const period = { periodStart: new Date(startMs), periodEnd: new Date(endMs) };
    // A per-request limit resolves to NaN: no number to report unless the store kept the last one applied.
    const declared = Number.isNaN(p.limit) ? undefined : p.limit;
    const store = this.limiter.engine.quotaStore;
    if (store.quotaUsage !== undefined) {
      const usage = await this.calls.call(
        [p.name],
        () => (store.quotaUsage as NonNullable<typeof store.quotaUsage>).call(store, p, checked, startMs),
        p,
      );
      const stored = usage.limit === undefined || Number.isNaN(usage.limit) ? undefined : usage.limit;
      return { used: usage.used, limit: stored ?? declared, ...period };
    }
    if (quotaPeriodAt(p.quota.period, p.quota.timeZone, nowMs).startMs !== startMs)
      return { used: 0, limit: declared, ...period };
    // Peek under a limit nothing reaches: what is used is that limit minus what remains.
    const probe = this.limiter.engine.withLimit(p, USAGE_PROBE_LIMIT);
    const decisions = await this.calls.call([p.name], (s) => s.peek([{ policy: probe, key: checked }]), p);
    const decision = elementAt(decisions, 0, "the store's reply to peek");
    return { used: USAGE_PROBE_LIMIT - decision.remaining, limit: declared, ...period };
  }
}
