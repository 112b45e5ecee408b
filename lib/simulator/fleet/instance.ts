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
  decisions?: RateLimitDecision[];
}

/**
 * One instance of the fleet: it decides each request as the engine's consumeOn does (lib/engine/
 * decision-engine.ts), with the engine's own pieces — splitByLeases spends from this instance's LeaseBook or
 * sends the item with its `upTo`, and the reply goes through rejoin, which keeps what the take got beyond the
 * cost. Like the engine, a request that finds no units here goes to the store even while an earlier take of the
 * same key is in flight. With lease 'off' there is no book: every request is a store call.
 */
export class FleetInstance {
  private readonly book: LeaseBook | undefined;
  private readonly items: readonly EngineItem[];

  constructor(
    readonly index: number,
    item: EngineItem,
    growth: LeaseMode,
  ) {
    this.book = growth === 'off' ? undefined : new LeaseBook(growth);
    this.items = [growth === 'off' ? { ...item, policy: { ...item.policy, lease: undefined } } : item];
  }

  /**
   * A request at `nowMs`: 'local' when the leases admitted it here, else the store call to send (the request
   * waits for its reply).
   */
  arrive(nowMs: number, atUs: number): 'local' | FleetCall {
    if (this.book === undefined) return { instance: this, sentUs: atUs, items: this.items, split: undefined };
    const split = splitByLeases(this.book, this.items, nowMs);
    if (split.forStore.length === 0) return 'local';
    return { instance: this, sentUs: atUs, items: split.forStore, split };
  }

  /** The reply of a call sent at `sentAtMs` (this instance's clock then): the leases keep what it took. */
  reply(call: FleetCall, sentAtMs: number): void {
    const { split, decisions } = call;
    if (this.book === undefined || split === undefined || decisions === undefined) return;
    const stored: Evaluation = { items: split.forStore, decisions };
    const admitted = !denies(stored);
    if (!admitted) unspend(this.book, split.spent);
    rejoin(this.book, this.items, split, stored, sentAtMs, admitted);
  }
}
