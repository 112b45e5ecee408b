import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import type { RateLimitStore, RateLimitStoreItem } from './rate-limit-store.js';
import type { OverrideStorage } from './overrides.js';
import type { PolicyRecords } from './policy-records.js';
import type { KeyedPolicy } from './storage-key.js';

// What the module's own stores offer the engine beyond the public contract (RateLimitStore). None of it is
// exported from the package: it may change with the engine. The engine reads each capability through
// EngineStore and treats a store that lacks one (any store of a user's) as not having it.

/** A store item as the engine sends it: a lease's item may ask for more than its cost. */
export interface EngineStoreItem extends RateLimitStoreItem {
  /**
   * A lease (RateLimitPolicy.lease): consume at least `cost` and, when more fits, up to `upTo` units; the
   * decision's `granted` says how many were consumed. Sent only to stores with `grantsUpTo`.
   */
  readonly upTo?: number;
}

/** An item of any store call: `cost` is absent for peek and reset. */
export type StoreCallItem = Omit<EngineStoreItem, 'cost'> & { readonly cost?: number };

/**
 * A store as the engine drives it: the public contract, and the capabilities the module's stores add. Every
 * RateLimitStore is one (each capability is optional).
 */
export interface EngineStore extends RateLimitStore {
  /** `call` matters only to a store that queues consumes before sending them (see RateLimitStoreCall). */
  consume(items: readonly EngineStoreItem[], call?: RateLimitStoreCall): Promise<RateLimitDecision[]>;
  /**
   * consume() decided now, for a store that decides in this process (the in-memory store): the engine then
   * makes no Promise of the store's and no async frame for the call. Throws what consume() would reject with;
   * undefined when consume() must be called instead (a subclass overrides it).
   */
  consumeNow?(items: readonly EngineStoreItem[]): RateLimitDecision[] | undefined;
  /**
   * A quota's usage for the period that starts at `periodStartMs` (stores that keep quota history, such as
   * PostgreSQL), with the limit applied by the last decision. Other stores answer through `peek`.
   */
  quotaUsage?(policy: ResolvedPolicy, key: string, periodStartMs: number): Promise<{ used: number; limit?: number }>;
  /**
   * The feed that tells every instance sharing the store when state changed outside a decision, so that none
   * keeps denying from its local cache of denials what the store would now admit. Without it, a cached denial
   * answers for at most DENY_CACHE_TRUST_MS before the store is asked again.
   */
  readonly changes?: RateLimitStoreChanges | undefined;
  /** Where the store keeps the overrides of RateLimitService.override; without it, a policy of it takes none. */
  readonly overrides?: OverrideStorage;
  /** Where the instances record their policies at start (for `npx nest-rate-limit`); without it, nowhere. */
  readonly policies?: PolicyRecords;
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
}

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
  /** The overrides (RateLimitService.override) changed: read them again. */
  overrides?(): void;
}

/** What an announcement says: these keys changed, every key did, or the overrides did. */
export type RateLimitAnnouncement = readonly RateLimitStoreChange[] | 'everything' | 'overrides';

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
  keyOf?(policy: KeyedPolicy, key: string): string;
  /**
   * Tells every instance that these keys changed (or, with 'everything', every key), each named as keyOf names
   * it, or with 'overrides' that the overrides changed; resolves once sent.
   */
  announce(changes: RateLimitAnnouncement): Promise<void>;
  /** Starts listening; resolves with the function that stops (once the first subscription is made, or failed). */
  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>>;
}
