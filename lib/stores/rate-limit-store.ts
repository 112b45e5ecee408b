import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/**
 * One policy applied to one identity: `key` is the identity (a user id, an IP, an API key) before any
 * prefixing or hashing, `cost` the units to consume (or, for refund, to give back).
 */
export interface RateLimitStoreItem {
  readonly policy: ResolvedPolicy;
  readonly key: string;
  readonly cost: number;
  /**
   * A shadow item (policy mode 'shadow') never denies the others: a consume decides it with them, writes it
   * only when it is allowed itself, and is allowed or denied by the other items alone. Its decision says
   * whether it would have denied.
   */
  readonly shadow?: boolean;
  /**
   * A lease (RateLimitPolicy.lease): consume at least `cost` and, when more fits, up to `upTo` units; the
   * decision's `granted` says how many were consumed. Only stores with `grantsUpTo` read it.
   */
  readonly upTo?: number;
}

/** An item of any store call: `cost` is absent for peek and reset. */
export type StoreCallItem = Omit<RateLimitStoreItem, 'cost'> & { readonly cost?: number };

/**
 * The module's timeout of one consume, for a store that holds consumes in a queue of its own before it sends
 * them (the PostgreSQL store, while its statements are busy). The timeout counts from the call, unless the
 * store calls `queued()` first (before it sends the consume): then it waits, and counts from `sent()`, when the
 * consume goes out; a second `sent()`, or `queued()` after it, changes nothing. Time in that queue is not the
 * store's alone (an app busy with its own traffic reads the replies that would let the queue move late), so
 * such a store bounds the wait itself: it refuses a queued consume when the calls it waits for have been out
 * for longer than `timeoutMs`, or when it has waited too long, and never sends a consume it refused.
 */
export interface RateLimitStoreCall {
  /** The module's `timeout`, in ms. */
  readonly timeoutMs: number;
  /** The consume waits in the store's queue: the module's timeout waits too. */
  queued(): void;
  /** The consume goes out now: the module's timeout counts from here. */
  sent(): void;
}

/**
 * Where rate-limit state lives. Every operation takes several items and returns one decision per item, in
 * order. `consume` is atomic and all-or-nothing: when any item is denied, no item is consumed.
 * Implement it to plug in your own store (`RateLimitModuleOptions.store`).
 * @example const [decision] = await store.consume([{ policy: validatePolicy(p), key: 'user:42', cost: 1 }]);
 */
export interface RateLimitStore {
  /** `call` matters only to a store that queues consumes before sending them (see RateLimitStoreCall). */
  consume(items: readonly RateLimitStoreItem[], call?: RateLimitStoreCall): Promise<RateLimitDecision[]>;
  /** Decides as consume would for a cost of 1, but changes nothing. */
  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]>;
  /** Gives each item's `cost` back, never beyond the policy's capacity; returns the state afterwards, as peek. */
  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
  /**
   * Takes each item's `cost` without deciding: counted even past the limit (a debt that later requests wait
   * out, as they would wait for the units to come back). Returns each key's state afterwards, as peek does.
   * A blocked key stays blocked and is charged all the same; a shadow item is not charged; a concurrency policy
   * cannot be charged (rejected). Stores that cannot charge leave it out; the module then says so.
   */
  charge?(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
  /** Forgets the items' state, blocks included. */
  reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void>;
  /**
   * Blocks the items' keys for `durationMs` from now (RateLimitService.block): consumes are denied until then,
   * the state stays as it was. Stores that cannot block leave it out; RateLimitService then says so.
   */
  block?(items: readonly Omit<RateLimitStoreItem, 'cost'>[], durationMs: number): Promise<void>;
  /** Lifts the items' blocks, whoever set them. */
  unblock?(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void>;
  /**
   * A quota's usage for the period that starts at `periodStartMs` (stores that keep quota history, such as
   * PostgreSQL), with the limit applied by the last decision. Other stores answer through `peek`.
   */
  quotaUsage?(policy: ResolvedPolicy, key: string, periodStartMs: number): Promise<{ used: number; limit?: number }>;
  /**
   * Removes all the store's state under its key prefix — every policy and key, blocks included — and resolves
   * with the number of keys or rows removed (RateLimitService.resetAll, for tests).
   */
  resetAll?(): Promise<number>;
  /** Resolves when the store answers; the circuit breaker probes with it while the store is failing. */
  ping?(): Promise<unknown>;
  /**
   * The feed that tells every instance sharing the store when state changed outside a decision, so that none
   * keeps denying from its local cache of denials what the store would now admit. Without it, a cached denial
   * answers for at most DENY_CACHE_TRUST_MS before the store is asked again.
   */
  readonly changes?: RateLimitStoreChanges | undefined;
  /**
   * True for a store that decides in this process, in its memory (the in-memory store): it cannot be down or
   * slow, so its calls get no timeout and no circuit breaker, and it needs no cache of denials.
   */
  readonly inProcess?: boolean;
  /**
   * True for a store whose consume honours an item's `upTo` (takes what fits, up to it, and says so in the
   * decision's `granted`): only such a store serves leases; with another, a policy's `lease` has no effect.
   */
  readonly grantsUpTo?: boolean;
  /** Releases what the store owns (connections it opened itself; never a client it was given). */
  close?(): Promise<void>;
}

/**
 * How long (ms of real time) a cached denial may answer without news from the store's feed of changes: a
 * reset, unblock or refund made through another instance lifts a denial within this time plus the trip of
 * its announcement (docs/stores.md, "Changes reach every instance within 1 s").
 */
export const DENY_CACHE_TRUST_MS = 750;

/**
 * A policy (by id) and key whose state changed outside a decision; the key as the feed names it
 * (RateLimitStoreChanges.keyOf).
 */
export interface RateLimitStoreChange {
  readonly policy: string;
  readonly key: string;
}

/** What a feed of changes tells the instance that listens. */
export interface RateLimitChangeListener {
  /** These keys changed (through another instance, or this one); 'everything': every key did. */
  changed(changes: readonly RateLimitStoreChange[] | 'everything'): void;
  /** Every announcement sent before `sentAt` (`performance.now()`) has been delivered. */
  confirmed(sentAt: number): void;
  /** Subscribed (again) since `since` (`performance.now()`): what was announced before is unknown. */
  live(since: number): void;
  /** The feed lost its connection (`reason`): announcements may be missed until the next live(). */
  lost(reason: Error): void;
}

/**
 * A store's feed of changes: announce() reaches the listeners of every instance (this one's too). A store that
 * delivers announcements at most once (Redis pub/sub) confirms delivery often (every DENY_CACHE_TRUST_MS / 3
 * at least), since a listener trusts what it remembers only while confirmations keep coming.
 */
export interface RateLimitStoreChanges {
  /**
   * How announcements name a key (an identity, as RateLimitStoreItem's `key`): as the store keeps it, so that
   * no secret an identity holds travels between instances (the module's stores: its keyed hash). Every instance
   * must name a key alike. Absent: the key as it is.
   */
  keyOf?(key: string): string;
  /**
   * Tells every instance that these keys changed (or, with 'everything', every key), each named as keyOf names
   * it; resolves once sent.
   */
  announce(changes: readonly RateLimitStoreChange[] | 'everything'): Promise<void>;
  /** Starts listening; resolves with the function that stops (once the first subscription is made, or failed). */
  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>>;
}

/**
 * DI token of the module's store, named like the interface it provides.
 * @example constructor(@Inject(RateLimitStore) private readonly store: RateLimitStore) {}
 */
export const RateLimitStore = Symbol('RateLimitStore');
