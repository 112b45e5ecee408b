import { ServiceCalls } from '../engine/service-calls.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import { AcquireQueues } from '../service/acquire-queue.js';
import {
  type RateLimitReservation,
  Reservation,
  type ReservationStore,
  type ReservedItem,
} from '../service/reservation.js';
import { checkActuals, ServiceArguments } from '../service/service-arguments.js';
import { elementAt } from '../util/element-at.js';
import type { RateLimitServiceItem } from './rate-limit.service.js';
import type { RateLimiter } from './rate-limiter.js';

/** Read through a function: TypeScript would keep `aborted` narrowed to false across an await. */
const isAborted = (signal: AbortSignal | undefined): signal is AbortSignal => signal?.aborted === true;

/**
 * How RateLimitService decides, behind its methods: the arguments checked, items decided all-or-nothing and
 * reported, reservations made and settled, and the waiters of acquire() served, all on the limiter's engine.
 */
export class ServiceDecisions {
  readonly args: ServiceArguments;
  readonly calls: ServiceCalls;

  /** The waiters of acquire(): they consume and give back on the same path as consume() and refund(). */
  readonly waiting = new AcquireQueues({
    consume: async (item) => elementAt(await this.decide([item]), 0, 'the decisions of a consume'),
    refund: (item) => this.calls.change([item], (store) => store.refund([item]), item.policy),
  });

  /** What reservations settle and cancel through: refunds and charges on each item's store. */
  private readonly stores: ReservationStore = {
    refund: (items) =>
      this.calls.eachStore(items, (part, policy) => this.calls.change(part, (store) => store.refund(part), policy)),
    charge: (items) => this.calls.eachStore(items, (part, policy) => this.calls.charge(part, policy)),
    now: () => this.limiter.engine.now(),
  };

  constructor(private readonly limiter: RateLimiter) {
    this.args = new ServiceArguments(limiter.planner);
    this.calls = new ServiceCalls(limiter.engine);
  }

  /** Each item's policy, key and cost checked, and whether it is in shadow mode. */
  resolve(items: readonly RateLimitServiceItem[]): ReservedItem[] {
    return items.map(({ policy, key, cost }) => {
      const p = this.args.policy(policy);
      const shadow = (p.mode ?? this.limiter.options.mode) === 'shadow';
      return { policy: p, key: this.args.key(key, p), cost: this.args.amount(cost ?? 1, p, 'cost'), shadow };
    });
  }

  /** One all-or-nothing decision of the items, reported to onDecision and the metrics. */
  async decide(resolved: readonly ReservedItem[]): Promise<RateLimitDecision[]> {
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

  /** RateLimitService.reserve: the items charged as consumeMany does, and the reservation that settles them. */
  async reserve(items: readonly RateLimitServiceItem[], signal?: AbortSignal): Promise<RateLimitReservation> {
    const resolved = this.resolve(items);
    if (signal?.aborted === true) throw signal.reason;
    const decisions = await this.decide(resolved);
    const check = (actual: unknown) =>
      checkActuals(this.args, actual, resolved).map((cost, i) => {
        const { policy, cost: estimate } = elementAt(resolved, i, 'the items of a reservation');
        return this.limiter.debtCap.clamp(policy, estimate, cost, 'RateLimitService.reserve().settle');
      });
    const reservation = new Reservation(resolved, decisions, this.stores, check, signal);
    // Aborted while the store call was on its way: what it took goes back.
    if (reservation.allowed && isAborted(signal)) {
      await reservation.cancel();
      throw signal.reason;
    }
    this.limiter.scopes.track(reservation);
    return reservation;
  }
}
