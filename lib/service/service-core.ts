import type { Logger } from '../util/logger.js';

import type { DecisionEngine } from '../engine/decision-engine.js';
import type { DecisionEvents } from '../limiter/decision-events.js';
import type { RoutePlanner } from '../planning/route-planner.js';
import type { ActualCostCap } from '../policy/debt-cap.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { RateLimitDecision, RateLimitMode, RateLimitPolicy, ResolvedPolicy } from '../policy/policy.types.js';
import { elementAt } from '../util/element-at.js';
import { checkAcquireOptions } from './acquire-options.js';
import { AcquireQueues } from './acquire-queue.js';
import { quotaUsage } from './quota-usage.js';
import { type RateLimitReservation, Reservation, type ReservationStore, type ReservedItem } from './reservation.js';
import type { ReservationScopes } from './reservation-scopes.js';
import { checkActuals, ServiceArguments } from './service-arguments.js';
import { ServiceCalls } from './service-calls.js';
import { ServiceOverrides } from './service-overrides.js';

/** An item of consumeMany and reserve: a policy (or its name), the key, and the cost (default 1). */
export interface RateLimitServiceItem {
  policy: RateLimitPolicy | string;
  key: string;
  cost?: number;
}

/** What RateLimitService works with, made at start: the module's limiter (nest/rate-limiter.ts) has each. */
export interface ServiceParts {
  readonly engine: DecisionEngine;
  /** The declared policies, which the service's methods may name. */
  readonly planner: RoutePlanner;
  /** onDecision and the metrics: the service's decisions are reported as the requests' are. */
  readonly events: DecisionEvents;
  /** Clamps a reservation's actual costs at the debt cap. */
  readonly debtCap: ActualCostCap;
  /** The reservations each HTTP request makes, settled at their estimate when it leaves them open. */
  readonly scopes: ReservationScopes;
  /** The module's mode, for a policy without one of its own. */
  readonly options: { readonly mode?: RateLimitMode };
  /** Where the service logs what it changes (overrides). */
  readonly logger: Logger;
}

/** Read through a function: TypeScript would keep `aborted` narrowed to false across an await. */
const isAborted = (signal: AbortSignal | undefined): signal is AbortSignal => signal?.aborted === true;

/**
 * RateLimitService's work, behind its Nest class (nest/rate-limit.service.ts, where each method is documented):
 * the arguments checked, items decided all-or-nothing and reported, reservations made and settled, the waiters
 * of acquire() served, and the store operations outside decisions, all on the limiter's engine.
 */
export class ServiceCore {
  private readonly args: ServiceArguments;
  private readonly calls: ServiceCalls;
  /** override(), removeOverride() and overrides(). */
  readonly overrides: ServiceOverrides;

  /** The waiters of acquire(): they consume and give back on the same path as consume() and refund(). */
  private readonly waiting = new AcquireQueues({
    consume: async (item) => elementAt(await this.decide([item]), 0, 'the decisions of a consume'),
    refund: (item) => this.calls.change([item], (store) => store.refund([item]), item.policy),
  });

  /** What reservations settle and cancel through: refunds and charges on each item's store. */
  private readonly stores: ReservationStore = {
    refund: (items) =>
      this.calls.eachStore(items, (part, policy) => this.calls.change(part, (store) => store.refund(part), policy)),
    charge: (items) => this.calls.eachStore(items, (part, policy) => this.calls.charge(part, policy)),
    now: () => this.parts.engine.now(),
  };

  constructor(private readonly parts: ServiceParts) {
    this.args = new ServiceArguments(parts.planner);
    this.calls = new ServiceCalls(parts.engine);
    this.overrides = new ServiceOverrides(parts.engine, this.args, parts.logger);
  }

  async consume(policy: RateLimitPolicy | string, key: string, cost: number | undefined): Promise<RateLimitDecision> {
    return elementAt(await this.consumeMany([{ policy, key, cost }]), 0, 'the decisions of a consume');
  }

  async consumeMany(items: readonly RateLimitServiceItem[]): Promise<RateLimitDecision[]> {
    return this.decide(this.resolve(items));
  }

  /** The items charged as consumeMany does, and the reservation that settles them. */
  async reserve(
    items: readonly RateLimitServiceItem[],
    signal: AbortSignal | undefined,
  ): Promise<RateLimitReservation> {
    const resolved = this.resolve(items);
    if (signal?.aborted === true) throw signal.reason;
    const decisions = await this.decide(resolved);
    const check = (actual: unknown) =>
      checkActuals(this.args, actual, resolved).map((cost, i) => {
        const { policy, cost: estimate } = elementAt(resolved, i, 'the items of a reservation');
        return this.parts.debtCap.clamp(policy, estimate, cost, 'RateLimitService.reserve().settle');
      });
    const reservation = new Reservation(resolved, decisions, this.stores, check, signal);
    // Aborted while the store call was on its way: what it took goes back.
    if (reservation.allowed && isAborted(signal)) {
      await reservation.cancel();
      throw signal.reason;
    }
    this.parts.scopes.track(reservation);
    return reservation;
  }

  /** Checks the arguments of acquire() (`opts` as the caller gave it) and queues the waiter. */
  async acquire(policy: RateLimitPolicy | string, key: string, opts: { cost?: number }): Promise<RateLimitDecision> {
    const p = this.args.policy(policy);
    const checked = this.args.key(key, p);
    const terms = checkAcquireOptions(opts, (field, problem) => {
      throw new RateLimitPolicyError(problem, { policy: p.name, field, where: 'RateLimitService' });
    });
    const cost = this.args.amount(opts.cost ?? 1, p, 'cost');
    return this.waiting.acquire({ policy: p, key: checked, cost, ...terms });
  }

  /** Rejects the acquires still waiting, and every later one (the module shuts down). */
  close(): void {
    this.waiting.close();
  }

  async peek(policy: RateLimitPolicy | string, key: string): Promise<RateLimitDecision> {
    return elementAt(await this.calls.peek(this.one(policy, key)), 0, "the store's reply to peek");
  }

  async refund(policy: RateLimitPolicy | string, key: string, amount: number): Promise<RateLimitDecision> {
    const { policy: p, key: checked } = this.one(policy, key);
    const item = { policy: p, key: checked, cost: this.args.amount(amount, p, 'amount') };
    const decisions = await this.calls.change([item], (store) => store.refund([item]), p);
    return elementAt(decisions, 0, "the store's reply to refund");
  }

  async block(policy: RateLimitPolicy | string, key: string, durationMs: number): Promise<void> {
    const item = this.one(policy, key, true);
    const checked = this.args.duration(durationMs, item.policy);
    await this.calls.block([item], checked, item.policy);
  }

  async unblock(policy: RateLimitPolicy | string, key: string): Promise<void> {
    const item = this.one(policy, key, true);
    await this.calls.unblock([item], item.policy);
  }

  resetAll(): Promise<number> {
    return this.calls.resetAll();
  }

  async reset(policy: RateLimitPolicy | string, key: string): Promise<void> {
    const item = this.one(policy, key);
    await this.calls.change([item], (store) => store.reset([item]), item.policy);
  }

  usage(
    policy: RateLimitPolicy | string,
    key: string,
    at: Date | undefined,
  ): Promise<{ used: number; limit: number | undefined; periodStart: Date; periodEnd: Date }> {
    return quotaUsage(this.parts.engine, { args: this.args, calls: this.calls }, this.args.lookup(policy), key, at);
  }

  /**
   * The policy and key of a call about one key, checked; `anyLimit` takes a policy whose limit depends on the
   * request too (blocks decide nothing).
   */
  private one(
    policy: RateLimitPolicy | string,
    key: string,
    anyLimit = false,
  ): { policy: ResolvedPolicy; key: string } {
    const p = anyLimit ? this.args.lookup(policy) : this.args.policy(policy);
    return { policy: p, key: this.args.key(key, p) };
  }

  /** Each item's policy, key and cost checked, whether it is in shadow mode, and its key's override. */
  private resolve(items: readonly RateLimitServiceItem[]): ReservedItem[] {
    return items.map(({ policy, key, cost }) => {
      const p = this.args.policy(policy);
      const shadow = (p.mode ?? this.parts.options.mode) === 'shadow';
      const item = { policy: p, key: this.args.key(key, p), cost: this.args.amount(cost ?? 1, p, 'cost'), shadow };
      return this.overrides.applied(item);
    });
  }

  /** One all-or-nothing decision of the items, reported to onDecision and the metrics. */
  private async decide(resolved: readonly ReservedItem[]): Promise<RateLimitDecision[]> {
    const decisions = await this.calls.call(
      resolved.map((i) => i.policy.name),
      () => this.parts.engine.consumeAcross(resolved),
    );
    this.parts.events.report(
      resolved.map((item, i) => [item, elementAt(decisions, i, 'the decisions of a consume')] as const),
      undefined,
    );
    return decisions;
  }
}
