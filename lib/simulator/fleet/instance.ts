import { fromCache, rememberDenials } from '../../engine/cached-denials.js';
import { DenyCache, type DenyTicket } from '../../engine/deny-cache.js';
import type { EngineItem, Evaluation } from '../../engine/evaluation.js';
import { denies } from '../../engine/evaluation.js';
import { LeaseBook } from '../../engine/lease-book.js';
import { rejoin, splitByLeases, unspend, type LeaseSplit } from '../../engine/leased-items.js';
import type { RateLimitDecision } from '../../policy/policy.types.js';
import type { LeaseMode } from './options.js';

/** A store call of one request of one instance, from its sending to its reply. */
export interface FleetCall {
  readonly instance: FleetInstance;
  readonly sentUs: number;
  readonly items: readonly EngineItem[];
  readonly split: LeaseSplit | undefined;
  readonly ticket: DenyTicket | undefined;
  decisions?: RateLimitDecision[];
}

/**
 * One instance of the fleet: it decides each request as the engine's consumeOn does (lib/engine/
 * decision-engine.ts), with the engine's own pieces — splitByLeases spends from this instance's LeaseBook or
 * sends the item with its `upTo`, and the reply goes through rejoin, which keeps what the take got beyond the
 * cost. Like the engine, a request that finds no units here goes to the store even while an earlier take of the
 * same key is in flight. With lease 'off' there is no book: every request is a store call. With `denyCache`
 * (the engine's default on a store in another process), a denial the store gave answers the instance's
 * requests locally until its retry-after, through the engine's DenyCache on the simulation's clock.
 */
export class FleetInstance {
  private readonly book: LeaseBook | undefined;
  private readonly items: readonly EngineItem[];
  private readonly cache: DenyCache | undefined;
  private nowMs = 0;

  constructor(
    readonly index: number,
    item: EngineItem,
    growth: LeaseMode,
    denyCache: boolean,
  ) {
    this.book = growth === 'off' ? undefined : new LeaseBook(growth);
    // The cache's own clock is real time in the engine; here the simulation's.
    this.cache = denyCache ? new DenyCache(10_000, () => this.nowMs) : undefined;
    this.items = [growth === 'off' ? { ...item, policy: { ...item.policy, lease: undefined } } : item];
  }

  /**
   * A request at `nowMs`: 'local' when the leases admitted it here, 'denied' when the cache of denials refused
   * it here, else the store call to send (the request waits for its reply).
   */
  arrive(nowMs: number, atUs: number): 'local' | 'denied' | FleetCall {
    this.nowMs = nowMs;
    const split = this.book === undefined ? undefined : splitByLeases(this.book, this.items, nowMs);
    if (split !== undefined && split.forStore.length === 0) return 'local';
    const items = split?.forStore ?? this.items;
    if (this.cache !== undefined && fromCache(this.cache, items, nowMs, false) !== undefined) return 'denied';
    return { instance: this, sentUs: atUs, items, split, ticket: this.cache?.begin() };
  }

  /** The reply of a call sent at `sentAtMs` (this instance's clock then): the leases keep what it took. */
  reply(call: FleetCall, sentAtMs: number, nowMs: number): void {
    const { split, decisions, ticket } = call;
    this.nowMs = nowMs;
    if (decisions === undefined) return;
    if (this.cache !== undefined && ticket !== undefined) {
      rememberDenials(this.cache, call.items, decisions, sentAtMs, ticket);
      this.cache.end();
    }
    if (this.book === undefined || split === undefined) return;
    const stored: Evaluation = { items: split.forStore, decisions };
    const admitted = !denies(stored);
    if (!admitted) unspend(this.book, split.spent);
    rejoin(this.book, this.items, split, stored, sentAtMs, admitted);
  }
}
