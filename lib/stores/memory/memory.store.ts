import { type Clock, systemClock } from '../../clock.js';
import type { RateLimitAlgorithm, RateLimitDecision } from '../../policy/policy.types.js';
import { consumeAll, peekState, refundAll, type StateTable } from '../engine.js';
import type { RateLimitStore, RateLimitStoreItem } from '../rate-limit-store.js';
import { checkKeyPrefix, storageKey } from '../storage-key.js';

/** Options of the in-memory store. */
export interface MemoryRateLimitStoreOptions {
  /** Time source; default the system clock. */
  clock?: Clock;
  /** Most keys held at once; beyond it the least recently written key is evicted. Default 1,000,000. */
  maxKeys?: number;
  /** Default 'rl:'. */
  keyPrefix?: string;
}

interface Entry {
  readonly algorithm: RateLimitAlgorithm;
  readonly state: unknown;
  readonly expiresAtMs: number;
}

/** Entries examined for expiry on every write: expired keys are reclaimed without a timer per key. */
const SWEEP_PER_WRITE = 4;

/**
 * The embedded store for a single process: the same algorithm steps as the Redis script, in a Map.
 * Limits are per process. Memory is bounded by `maxKeys` (least recently written evicted first), and expired
 * entries are reclaimed a few at a time on every write, with no timer per hit.
 * @example RateLimitModule.forRoot({ store: new MemoryRateLimitStore({ maxKeys: 100_000 }) })
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly maxKeys: number;
  private readonly keyPrefix: string;
  private sweeper: Iterator<[string, Entry]> = this.entries.entries();
  // Eviction walks the Map from its front with one long-lived iterator: asking a new iterator for the first
  // key would step over every deleted slot at the front of the Map's table each time.
  private evictor: Iterator<string> = this.entries.keys();
  private nowMs = 0;
  private readonly table: StateTable = {
    get: (key, algorithm) => {
      const entry = this.entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.expiresAtMs <= this.nowMs) {
        this.entries.delete(key);
        return undefined;
      }
      return entry.algorithm === algorithm ? entry.state : undefined;
    },
    set: (key, algorithm, state, ttlMs) => {
      // Deleting first moves a rewritten key to the end of the Map's order, which makes the front the
      // least recently written key: the one to evict.
      this.entries.delete(key);
      this.sweep(SWEEP_PER_WRITE);
      if (state === undefined || ttlMs <= 0) return;
      this.entries.set(key, { algorithm, state, expiresAtMs: this.nowMs + ttlMs });
      if (this.entries.size > this.maxKeys) this.evictOldest();
    },
  };

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.keyPrefix = checkKeyPrefix(options.keyPrefix ?? 'rl:');
    const maxKeys = options.maxKeys ?? 1_000_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new TypeError(`nestjs-rate-limit: MemoryRateLimitStore maxKeys must be an integer >= 1, got ${maxKeys}`);
    }
    this.maxKeys = maxKeys;
  }

  /** Keys currently held (expired keys count until they are reclaimed). */
  get size(): number {
    return this.entries.size;
  }

  async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return consumeAll(this.keyed(items), this.nowMs, this.table);
  }

  async peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return items.map(({ policy, key }) =>
      peekState(policy, this.table.get(this.storageKey(policy.id, key), policy.algorithm), this.nowMs),
    );
  }

  async refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.nowMs = this.clock.now();
    return refundAll(this.keyed(items), this.nowMs, this.table);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    for (const { policy, key } of items) this.entries.delete(this.storageKey(policy.id, key));
  }

  /** Removes every expired entry now and returns how many went. */
  prune(): number {
    this.nowMs = this.clock.now();
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAtMs <= this.nowMs) {
        this.entries.delete(key);
        removed++;
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  private keyed(items: readonly RateLimitStoreItem[]): RateLimitStoreItem[] {
    return items.map((item) => ({
      policy: item.policy,
      key: this.storageKey(item.policy.id, item.key),
      cost: item.cost,
    }));
  }

  private storageKey(policyName: string, identity: string): string {
    return storageKey(this.keyPrefix, policyName, identity);
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
        this.sweeper = this.entries.entries();
        next = this.sweeper.next();
        if (next.done === true) return;
      }
      const [key, entry] = next.value;
      if (entry.expiresAtMs <= this.nowMs) this.entries.delete(key);
    }
  }
}
