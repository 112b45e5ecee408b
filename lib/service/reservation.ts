import { unitsStillHeld } from '../algorithms/still-held.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';
import { elementAt } from '../util/element-at.js';

/** How reservations reach the store: units given back, or taken without deciding (RateLimitStore.charge). */
export interface ReservationStore {
  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
  charge(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
  /** The engine's clock, which dated the charge: a refund gives back only what the key still holds of it. */
  now(): number;
}

/**
 * Units charged ahead at an estimate (`RateLimitService.reserve`), to be settled at the actual cost once it is
 * known, or cancelled. Either call is made once: a second call, from any path, does nothing and resolves as
 * the first did. Nothing is charged when the reservation was denied; settle and cancel then do nothing.
 * @example
 * const reservation = await rateLimits.reserve([{ policy: 'ai-tokens', key, cost: estimate }], { signal });
 * if (!reservation.allowed) throw new RateLimitExceededException(reservation.decisions[0]);
 * try { const answer = await callModel(); await reservation.settle(answer.usage.totalTokens); }
 * catch (error) { await reservation.cancel(); throw error; }
 */
export interface RateLimitReservation {
  /** One decision per item, in their order, as consumeMany answers. */
  readonly decisions: readonly RateLimitDecision[];
  /** True when every item was charged (all-or-nothing, as consumeMany: a shadow item never denies the others). */
  readonly allowed: boolean;
  /**
   * Settles at the actual cost: one number for every item, or one per item. Where the estimate was more, the
   * difference is given back as far as the key still holds it (none once the charge's window has passed; of a
   * token bucket or GCRA, only the part of the charge that has not refilled since: what refilled may be
   * another request's now);
   * where it was less, the overrun is charged without deciding, which may leave the key in debt that later
   * requests wait out. Resolves with each item's state afterwards (the reservation's decision where nothing
   * changed).
   */
  settle(actual: number | readonly number[]): Promise<readonly RateLimitDecision[]>;
  /** Gives the whole charge back (a model that was never called, a handler that failed). */
  cancel(): Promise<void>;
}

/** An item of a reservation, as charged: `shadow` items consumed nothing and are never settled. */
export type ReservedItem = RateLimitStoreItem;

/**
 * A reservation as RateLimitService makes it: `check(actual)` turns settle's argument into one actual cost per
 * item (a bad one throws, and the reservation stays open); `signal`, when aborted first, cancels it.
 */
export class Reservation implements RateLimitReservation {
  readonly allowed: boolean;
  private finished: Promise<readonly RateLimitDecision[]> | undefined;
  private readonly atMs: number;
  private readonly onAbort = (): void => void this.cancel().catch(() => undefined);

  constructor(
    private readonly items: readonly ReservedItem[],
    readonly decisions: readonly RateLimitDecision[],
    private readonly store: ReservationStore,
    private readonly check: (actual: unknown) => readonly number[],
    private readonly signal?: AbortSignal,
  ) {
    this.atMs = store.now();
    this.allowed = items.every((item, i) => item.shadow === true || decisions[i]?.allowed === true);
    if (!this.allowed) this.finished = Promise.resolve(decisions);
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Whether it was settled or cancelled (or denied, so that there was nothing to settle). */
  get done(): boolean {
    return this.finished !== undefined;
  }

  settle(actual: number | readonly number[]): Promise<readonly RateLimitDecision[]> {
    if (this.finished !== undefined) return this.finished;
    let actuals: readonly number[];
    try {
      actuals = this.check(actual);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return this.finish(actuals);
  }

  cancel(): Promise<void> {
    return (this.finished ?? this.finish(this.items.map(() => 0))).then(() => undefined);
  }

  /**
   * Keeps the charge as it stands, with no store call, and makes the reservation done: for one its request
   * left open (ReservationScopes). Returns whether it was still open, so that it is reported once.
   */
  settleAtEstimate(): boolean {
    if (this.finished !== undefined) return false;
    this.signal?.removeEventListener('abort', this.onAbort);
    this.finished = Promise.resolve(this.decisions);
    return true;
  }

  /** What each item charged, by policy name: shadow items charged nothing and are left out. */
  get estimates(): readonly { policy: string; cost: number }[] {
    return this.items.filter((item) => item.shadow !== true).map(({ policy, cost }) => ({ policy: policy.name, cost }));
  }

  /** Gives back what each item's actual cost leaves of its charge, and charges what it goes past. */
  private finish(actuals: readonly number[]): Promise<readonly RateLimitDecision[]> {
    this.signal?.removeEventListener('abort', this.onAbort);
    const refunds: { index: number; item: ReservedItem }[] = [];
    const charges: { index: number; item: ReservedItem }[] = [];
    const nowMs = this.store.now();
    this.items.forEach((item, index) => {
      const actual = actuals[index] ?? item.cost;
      if (item.shadow === true || actual === item.cost) return;
      if (actual > item.cost) {
        charges.push({ index, item: { ...item, cost: actual - item.cost } });
        return;
      }
      const held = unitsStillHeld(item.policy, item.cost, this.atMs, nowMs, this.decisions[index]?.resetMs);
      const back = Math.min(item.cost - actual, held);
      if (back > 0) refunds.push({ index, item: { ...item, cost: back } });
    });
    this.finished = this.apply(refunds, charges);
    return this.finished;
  }

  private async apply(
    refunds: readonly { index: number; item: ReservedItem }[],
    charges: readonly { index: number; item: ReservedItem }[],
  ): Promise<readonly RateLimitDecision[]> {
    const after = [...this.decisions];
    const [refunded, charged] = await Promise.all([
      refunds.length > 0 ? this.store.refund(refunds.map(({ item }) => item)) : [],
      charges.length > 0 ? this.store.charge(charges.map(({ item }) => item)) : [],
    ]);
    refunds.forEach(({ index }, i) => (after[index] = elementAt(refunded, i, "the store's reply to refund")));
    charges.forEach(({ index }, i) => (after[index] = elementAt(charged, i, "the store's reply to charge")));
    return after;
  }
}
