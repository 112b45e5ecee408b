import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';

/**
 * One key's lease in this instance: units the store has counted and this instance has not spent yet, spendable
 * until `untilMs` (this instance's clock); what the store had left after the take, and when its usage resets,
 * for the headers; `size`, how many units the next take asks for.
 */
interface Lease {
  units: number;
  untilMs: number;
  storeRemaining: number;
  resetAtMs: number;
  size: number;
  /** A take for more than its cost is on its way: other requests of the key wait for it (see `pending`). */
  taking: Take | undefined;
  /** The key's id as the feed of changes names it (`<policy id>\n<key as keyOf names it>`). */
  readonly feedId: string;
}

/** Keys with a lease an instance remembers at most; beyond, the ones that lapsed go first, then the oldest. */
export const MAX_LEASED_KEYS = 10_000;

/** A take on its way, and how to tell its waiters that it came back. */
interface Take {
  readonly done: Promise<void>;
  readonly settle: () => void;
}

function take(): Take {
  let settle: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (settle = resolve));
  return { done, settle };
}

/** A key's lease before its first take: nothing to spend. */
const LAPSED: Omit<Lease, 'size' | 'taking' | 'feedId'> = { units: 0, untilMs: 0, storeRemaining: 0, resetAtMs: 0 };

const idOf = (policy: ResolvedPolicy, key: string): string => `${policy.id}\n${key}`;

/**
 * How long the units of a take stay spendable, in ms from the moment the take was sent (the store decided
 * later, so this is never longer than the store allows). Window algorithms: until the window (a quota: the
 * period) the store counted them in ends. Token bucket and GCRA: while spending them later cannot exceed the
 * bucket — for as long as the bucket, before the take, was from full (its level is under `capacity − remaining
 * − granted` units, with remaining rounded down: one unit is kept in hand); with a full bucket, not at all.
 * Over any interval the fleet then admits at most what the bucket admits over it.
 */
export function leaseLifetimeMs(policy: ResolvedPolicy, decision: RateLimitDecision, granted: number): number {
  switch (policy.algorithm) {
    case 'fixed-window':
    case 'quota':
      return decision.resetMs;
    case 'sliding-window-counter':
      // the reset of a key that counts in this window is the end of the next one
      return Math.max(0, decision.resetMs - policy.windowMs);
    case 'token-bucket':
    case 'gcra': {
      const below = policy.capacity - decision.remaining - granted - 1;
      return below <= 0 ? 0 : Math.floor((below * policy.windowMs) / policy.limit);
    }
    default:
      return 0;
  }
}

/**
 * The leases of one instance (RateLimitPolicy.lease): a request whose key holds enough units here is admitted
 * without a store call; otherwise the store call takes up to the key's next size (`askFor`), and what it took
 * beyond the request's cost is kept (`took`). Units taken are counted by the store before they are spent, so
 * the fleet never admits more than the limit; units that lapse, or that another instance holds while this one
 * is refused, are the under-admission (at most instances × lease per window).
 *
 * Leases are kept by `<policy id>\n<key>` (the raw identity, in this process's memory only); the feed of changes
 * names keys as the store keeps them (`feedKey`), found through an index.
 */
export class LeaseBook {
  private readonly leases = new Map<string, Lease>();
  /** The id of each lease, by its feed id. */
  private readonly byFeedId = new Map<string, string>();

  constructor(
    private readonly maxKeys = MAX_LEASED_KEYS,
    /** How the feed of changes names a key (RateLimitStoreChanges.keyOf); default as it is. */
    private readonly feedKey: (policy: ResolvedPolicy, key: string) => string = (_, key) => key,
  ) {}

  /** The number of keys with a lease (for tests and metrics). */
  get size(): number {
    return this.leases.size;
  }

  /**
   * Spends `cost` units of the key's lease: the decision (remaining: the units left here plus what the store
   * had left at the take), or undefined when the lease lapsed or holds fewer.
   */
  spend(policy: ResolvedPolicy, key: string, cost: number, nowMs: number): RateLimitDecision | undefined {
    const lease = this.leases.get(idOf(policy, key));
    if (lease === undefined || lease.untilMs <= nowMs || lease.units < cost || cost < 1) return undefined;
    lease.units -= cost;
    return {
      allowed: true,
      policy: policy.name,
      limit: policy.capacity,
      remaining: Math.min(policy.capacity, lease.units + lease.storeRemaining),
      resetMs: Math.max(0, lease.resetAtMs - nowMs),
      retryAfterMs: 0,
    };
  }

  /** Gives back units spent here by a request that another policy then refused. */
  unspend(policy: ResolvedPolicy, key: string, cost: number): void {
    const lease = this.leases.get(idOf(policy, key));
    if (lease !== undefined) lease.units += cost;
  }

  /**
   * The most units a take for a request of `cost` asks for: the key's size, never less than the cost. The size
   * grows (doubles up to the policy's lease) when the key's lease was still running but ran out (the key is
   * hot here), and shrinks (halves) when units lapsed unspent.
   */
  askFor(policy: ResolvedPolicy, key: string, cost: number, nowMs: number): number {
    const limit = policy.lease ?? 1;
    const lease = this.leases.get(idOf(policy, key));
    // one take for more at a time per key: an instance never holds (or waits for) more than one lease of it
    if (lease?.taking !== undefined) return cost;
    let size = 1;
    if (lease !== undefined) {
      if (lease.untilMs > nowMs) lease.size = Math.min(limit, lease.size * 2);
      else if (lease.units > 0) lease.size = Math.max(1, Math.ceil(lease.size / 2));
      size = lease.size;
    }
    // the others wait for this take, also a key's first (of its cost): they may find units when it is back
    if (lease !== undefined) lease.taking = take();
    else this.add(idOf(policy, key), { ...LAPSED, size, taking: take(), feedId: this.feedIdOf(policy, key) });
    return Math.max(cost, size);
  }

  /**
   * The take on its way for a key whose lease cannot cover `cost` now: a request waits for it rather than ask
   * the store itself (undefined: none on its way, or the lease covers it).
   */
  pending(policy: ResolvedPolicy, key: string, cost: number, nowMs: number): Promise<void> | undefined {
    const lease = this.leases.get(idOf(policy, key));
    if (lease?.taking === undefined) return undefined;
    return lease.untilMs > nowMs && lease.units >= cost ? undefined : lease.taking.done;
  }

  /** Whether a take of the key is on its way (its requests wait for it). */
  taking(policy: ResolvedPolicy, key: string): boolean {
    return this.leases.get(idOf(policy, key))?.taking !== undefined;
  }

  /** A take for more than its cost came back (or failed): its waiters go on, and the key may take again. */
  settled(policy: ResolvedPolicy, key: string): void {
    const lease = this.leases.get(idOf(policy, key));
    lease?.taking?.settle();
    if (lease !== undefined) lease.taking = undefined;
  }

  /** Keeps what a take sent at `sentAtMs` took beyond the request's cost. */
  took(policy: ResolvedPolicy, key: string, cost: number, decision: RateLimitDecision, sentAtMs: number): void {
    const granted = decision.granted ?? cost;
    const id = idOf(policy, key);
    const before = this.leases.get(id);
    const untilMs = sentAtMs + leaseLifetimeMs(policy, decision, granted);
    const running = before !== undefined && before.untilMs > sentAtMs;
    const lease: Lease = {
      taking: before?.taking,
      units: granted - cost + (running ? before.units : 0),
      untilMs: running ? Math.min(before.untilMs, untilMs) : untilMs,
      storeRemaining: decision.remaining,
      resetAtMs: sentAtMs + decision.resetMs,
      size: before?.size ?? 1,
      feedId: before?.feedId ?? this.feedIdOf(policy, key),
    };
    this.leases.delete(id);
    this.add(id, lease);
    if (this.leases.size > this.maxKeys) this.trim(sentAtMs);
  }

  /** The id of a policy and key as the feed of changes names it: `<policy id>\n<key as keyOf names it>`. */
  private feedIdOf(policy: ResolvedPolicy, key: string): string {
    return `${policy.id}\n${this.feedKey(policy, key)}`;
  }

  /**
   * The key's state changed outside a decision (reset, block, refund elsewhere): its units here lapse. `feedId`
   * names it as the feed does (feedIdOf).
   */
  forget(feedId: string): void {
    const id = this.byFeedId.get(feedId);
    if (id !== undefined) this.drop(id);
  }

  /** Every lease lapses (the feed of changes was lost: a change may have been missed). */
  forgetAll(): void {
    for (const lease of this.leases.values()) lease.taking?.settle();
    this.leases.clear();
    this.byFeedId.clear();
  }

  private add(id: string, lease: Lease): void {
    this.leases.set(id, lease);
    this.byFeedId.set(lease.feedId, id);
  }

  /** Removes a lease; its waiters go on. */
  private drop(id: string): void {
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    lease.taking?.settle();
    this.leases.delete(id);
    this.byFeedId.delete(lease.feedId);
  }

  /** Removes leases that lapsed, then the oldest, down to the bound. */
  private trim(nowMs: number): void {
    for (const [id, lease] of this.leases) if (lease.untilMs <= nowMs && lease.taking === undefined) this.drop(id);
    for (const id of this.leases.keys()) {
      if (this.leases.size <= this.maxKeys) break;
      this.drop(id);
    }
  }
}
