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
}

/**
 * Where rate-limit state lives: the contract a store of your own implements (`RateLimitModuleOptions.store`).
 * Every operation takes several items and returns one decision per item, in order. `consume` is atomic and
 * all-or-nothing: when any item is denied, no item is consumed. Four operations are required; `charge`, `block`,
 * `unblock`, `resetAll`, `ping` and `close` are optional, and the module does without what a store leaves out
 * (docs/stores.md, "Writing a store").
 * @example const [decision] = await store.consume([{ policy: validatePolicy(p), key: 'user:42', cost: 1 }]);
 */
export interface RateLimitStore {
  /** Decides every item and, when all are allowed, consumes each one's `cost`; when any is denied, none. */
  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]>;
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
   * Removes all the store's state under its key prefix — every policy and key, blocks included — and resolves
   * with the number of keys or rows removed (RateLimitService.resetAll, for tests).
   */
  resetAll?(): Promise<number>;
  /** Resolves when the store answers; the circuit breaker probes with it while the store is failing. */
  ping?(): Promise<unknown>;
  /**
   * Releases what the store owns (connections it opened itself; never a client it was given). The module calls
   * it only on the stores it made; a store passed as `store` is yours to close.
   */
  close?(): Promise<void>;
}

/**
 * DI token of the module's store, named like the interface it provides.
 * @example constructor(@Inject(RateLimitStore) private readonly store: RateLimitStore) {}
 */
export const RateLimitStore = Symbol('RateLimitStore');
