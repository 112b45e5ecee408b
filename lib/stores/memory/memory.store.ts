import { type Clock, systemClock } from '../../util/clock.js';
import type { RateLimitDecision } from '../../policy/policy.types.js';
import { blockAll, chargeAll, consumeAll, peekState, refundAll, type StateTable } from '../consume-all.js';
import type { EngineStore, EngineStoreItem } from '../engine-store.js';
import type { RateLimitStoreItem } from '../rate-limit-store.js';
import { checkKeyPrefix, type IdentityOptions, type KeyedPolicy, StoredIdentities } from '../storage-key.js';
import { MemoryOverrides } from './memory-overrides.js';
import { RecentKeys } from './recent-keys.js';

/** Options of the in-memory store. */
export interface MemoryRateLimitStoreOptions extends IdentityOptions {
  /** Time source; default the system clock. */
  clock?: Clock;
  /** Most keys held at once; beyond it the least recently written key is evicted. Default 1,000,000. */
  maxKeys?: number;
  /**
   * Checked like the other stores' (no braces or spaces), but not needed: the Map is this process's own. It is
   * part of the default secret of the identities' hash, as in the other stores.
   */
  keyPrefix?: string;
  /**
   * Milliseconds a key is kept past its reset, as the other stores do: a clock that steps back by up to this
   * much finds the state it still counts. Default 1000.
   */
  ttlSlackMs?: number;
}

/**
 * A key's state and when it expires, in whole seconds since the store was made (rounded up: expiring a
 * little late is harmless, since an algorithm reads a state past its reset time as empty). Seconds keep the
 * number a small integer that V8 stores inline, not as a boxed double: about 30 bytes less per key.
 */
interface Entry {
  readonly state: unknown;
  readonly expires: number;
}

/** Entries examined for expiry on every write: expired keys are reclaimed without a timer per key. */
const SWEEP_PER_WRITE = 4;

/**
 * The embedded store for a single process: the same algorithm steps as the Redis script, in a Map.
 * Limits are per process. Memory is bounded by `maxKeys` (least recently written evicted first), and expired
 * entries are reclaimed a few at a time on every write, with no timer per hit.
 * @example RateLimitModule.forRoot({ store: new MemoryRateLimitStore({ maxKeys: 100_000 }) })
 */
export class MemoryRateLimitStore implements EngineStore {
  /** @internal */
  readonly inProcess = true;
  /** @internal */
  readonly grantsUpTo = true;
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly maxKeys: number;
  // Keys, not entries: an entry iterator makes a [key, value] array for each entry it passes.
  private sweeper: Iterator<string> = this.entries.keys();
  // Eviction walks the Map from its front with one long-lived iterator: asking a new iterator for the first
  // key would step over every deleted slot at the front of the Map's table each time.
  private evictor: Iterator<string> = this.entries.keys();
  private nowMs = 0;
  private readonly epochMs: number;
  private readonly ttlSlackMs: number;
  /** The identities as the Map's keys hold them (a keyed hash unless `readableKeys`), as the other stores'. */
  private readonly identities: StoredIdentities;
  /**
   * The overrides of RateLimitService.override, in this process.
   * @internal
   */
  readonly overrides: MemoryOverrides;
  /** Per policy, the Map keys of the identities met lately (RecentKeys): no key is rebuilt per request. */
  private readonly keys = new WeakMap<KeyedPolicy, RecentKeys>();
  private readonly table: StateTable = {
    get: (key) => {
      const entry = this.entries.get(key);
      if (entry === undefined) return undefined;
      if (this.expired(entry)) {
        this.entries.delete(key);
        return undefined;
      }
      return entry.state;
    },
    set: (key, _algorithm, state, ttlMs) => {
      // Deleting first moves a rewritten key to the end of the Map's order, which makes the front the
      // least recently written key: the one to evict.
      this.entries.delete(key);
      this.sweep(SWEEP_PER_WRITE);
      // A state is kept whatever its reset on this clock: a clock behind may still count it (within the slack).
      if (state === undefined) return;
      const expires = Math.ceil((this.nowMs + Math.max(ttlMs, 0) + this.ttlSlackMs - this.epochMs) / 1000);
      this.entries.set(key, { state, expires });
      if (this.entries.size > this.maxKeys) this.evictOldest();
    },
  };

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.epochMs = this.clock.now();
    this.identities = new StoredIdentities(checkKeyPrefix(options.keyPrefix ?? 'rl:'), options);
    this.overrides = new MemoryOverrides(this.identities);
    const maxKeys = options.maxKeys ?? 1_000_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new TypeError(`nest-rate-limit: MemoryRateLimitStore maxKeys must be an integer >= 1, got ${maxKeys}`);
    }
    this.maxKeys = maxKeys;
    const slack = options.ttlSlackMs ?? 1000;
    if (!Number.isSafeInteger(slack) || slack < 0) {
      throw new TypeError(`nest-rate-limit: MemoryRateLimitStore ttlSlackMs must be an integer >= 0, got ${slack}`);
    }
    this.ttlSlackMs = slack;
  }

  /** Keys currently held (expired keys count until they are reclaimed). */
  get size(): number {
    return this.entries.size;
  }

  // Not an async function: the decision is made now, and its Promise is the only object this adds.
  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    try {
      return Promise.resolve(this.decideNow(items));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @internal consume(), decided now (EngineStore.consumeNow): the request path's. Undefined when consume() is
   * not this class's own (a subclass's, or a wrapper set on the instance): that one then decides, as it means to.
   */
  consumeNow(items: readonly RateLimitStoreItem[]): RateLimitDecision[] | undefined {
    if (this.consume !== MemoryRateLimitStore.prototype.consume) return undefined;
    return this.decideNow(items);
  }

  private decideNow(items: readonly RateLimitStoreItem[]): RateLimitDecision[] {
    this.nowMs = this.clock.now();
    return consumeAll(this.keyed(items), this.nowMs, this.table);
  }

  async peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return items.map(({ policy, key }) =>
      peekState(policy, this.table.get(this.storageKey(policy, key), policy.algorithm), this.nowMs),
    );
  }

  async refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return refundAll(this.keyed(items), this.nowMs, this.table);
  }

  /** Takes each item's cost without deciding, past the limit (consume-all.ts' chargeAll). */
  async charge(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return chargeAll(this.keyed(items), this.nowMs, this.table);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    for (const { policy, key } of items) this.entries.delete(this.storageKey(policy, key));
  }

  async block(items: readonly Omit<RateLimitStoreItem, 'cost'>[], durationMs: number): Promise<void> {
    this.nowMs = this.clock.now();
    blockAll(this.keyed(items.map((item) => ({ ...item, cost: 0 }))), this.nowMs + durationMs, this.nowMs, this.table);
  }

  async unblock(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    this.nowMs = this.clock.now();
    blockAll(this.keyed(items.map((item) => ({ ...item, cost: 0 }))), 0, this.nowMs, this.table);
  }

  /** Removes every expired entry now and returns how many went. */
  prune(): number {
    this.nowMs = this.clock.now();
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (this.expired(entry)) {
        this.entries.delete(key);
        removed++;
      }
    }
    return removed;
  }

  /** Forgets all state (every policy and key, blocks included); resolves with how many keys went. */
  async resetAll(): Promise<number> {
    const removed = this.entries.size + this.overrides.clear();
    this.entries.clear();
    this.sweeper = this.entries.keys();
    this.evictor = this.entries.keys();
    return removed;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  private keyed(items: readonly EngineStoreItem[]): EngineStoreItem[] {
    const keyed = new Array<EngineStoreItem>(items.length);
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as EngineStoreItem;
      keyed[i] = {
        policy: item.policy,
        key: this.storageKey(item.policy, item.key),
        cost: item.cost,
        shadow: item.shadow,
        upTo: item.upTo,
      };
    }
    return keyed;
  }

  /**
   * The Map key of a policy and identity: the identity as the stores keep it (a keyed hash of it and the
   * policy's shape; with `readableKeys`, the shape beside it), after the policy's id and a newline, which no id
   * holds. No prefix or hash tag: the Map is this process's.
   */
  private storageKey(policy: KeyedPolicy, identity: string): string {
    let memo = this.keys.get(policy);
    if (memo === undefined) this.keys.set(policy, (memo = new RecentKeys()));
    const known = memo.get(identity);
    if (known !== undefined) return known;
    const stored = this.identities.of(policy.shape, identity);
    // join() builds a flat string; a template literal would keep a tree of its parts alive for every key
    const key = (this.identities.readable ? [policy.id, policy.shape, stored] : [policy.id, stored]).join('\n');
    memo.set(identity, key);
    return key;
  }

  private expired(entry: Entry): boolean {
    return entry.expires * 1000 + this.epochMs <= this.nowMs;
  }

  private evictOldest(): void {
    let oldest = this.evictor.next();
    if (oldest.done === true) {
      this.evictor = this.entries.keys();
      oldest = this.evictor.next();
    }
    if (oldest.done !== true) this.entries.delete(oldest.value);
  }

  /** Examines the next `count` entries of a cursor that cycles through the map, deleting expired ones. */
  private sweep(count: number): void {
    for (let i = 0; i < count; i++) {
      let next = this.sweeper.next();
      if (next.done === true) {
        this.sweeper = this.entries.keys();
        next = this.sweeper.next();
        if (next.done === true) return;
      }
      const key = next.value;
      const entry = this.entries.get(key);
      if (entry !== undefined && this.expired(entry)) this.entries.delete(key);
    }
  }
}
