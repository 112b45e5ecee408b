import { fromCache, rememberDenials } from '../../../../lib/engine/coherence/cached-denials.js';
import { DenyCache, type DenyTicket } from '../../../../lib/engine/coherence/deny-cache.js';
import type { EngineItem, Evaluation } from '../../../../lib/engine/evaluation.js';
import { denies } from '../../../../lib/engine/evaluation.js';
import { LeaseBook } from '../../../../lib/engine/leases/lease-book.js';
import {
  MAX_TAKES_WAITED,
  rejoin,
  settle,
  splitByLeases,
  takesToWaitFor,
  unspend,
  type LeaseSplit,
} from '../../../../lib/engine/leases/leased-items.js';
import type { RateLimitDecision } from '../../../../lib/policy/policy.types.js';
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
 * cost. Like the engine, a request that finds no units here while a take of its key is on its way waits for that
 * take (MAX_TAKES_WAITED at most), then goes to the store. With lease 'off' there is no book: every request is a
 * store call. With `denyCache`
 * (the engine's default on a store in another process), a denial the store gave answers the instance's
 * requests locally until its retry-after, through the engine's DenyCache on the simulation's clock.
 */
export class FleetInstance {
  private readonly book: LeaseBook | undefined;
  private readonly items: readonly EngineItem[];
  private readonly cache: DenyCache | undefined;
  /** The requests waiting for this instance's take on its way, each with the takes it waited for so far. */
  private waiting: number[] = [];
  /** The requests whose take is over, to arrive again. */
  private goOn: number[] = [];
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
   * A request at `nowMs` (that waited for `waited` takes already): 'local' when the leases admitted it here,
   * 'denied' when the cache of denials refused it here, 'waiting' when it waits for the take on its way (it
   * arrives again when that is back: see reply), else the store call to send (the request waits for its reply).
   */
  arrive(nowMs: number, atUs: number, waited = 0): 'local' | 'denied' | 'waiting' | FleetCall {
    this.nowMs = nowMs;
    if (this.book !== undefined && waited < MAX_TAKES_WAITED) {
      if (takesToWaitFor(this.book, this.items, nowMs).length > 0) {
        this.waiting.push(waited + 1);
        return 'waiting';
      }
    }
    const split = this.book === undefined ? undefined : splitByLeases(this.book, this.items, nowMs);
    if (split !== undefined && split.forStore.length === 0) return 'local';
    const items = split?.forStore ?? this.items;
    if (this.cache !== undefined && fromCache(this.cache, items, nowMs) !== undefined) {
      // no call: a take it began is over, and whoever waited for it goes on (the engine's finally)
      if (split !== undefined) this.settled(split);
      return 'denied';
    }
    return { instance: this, sentUs: atUs, items, split, ticket: this.cache?.begin() };
  }

  /**
   * The reply of a call sent at `sentAtMs` (this instance's clock then): the leases keep what it took, and the
   * requests that waited for its take go on (resumed()).
   */
  reply(call: FleetCall, sentAtMs: number, nowMs: number): void {
    const { split, decisions, ticket } = call;
    this.nowMs = nowMs;
    if (decisions === undefined) return;
    if (this.cache !== undefined && ticket !== undefined) {
      rememberDenials(this.cache, call.items, decisions, sentAtMs, ticket);
      this.cache.end();
    }
    if (this.book === undefined || split === undefined) return;
    this.settled(split);
    const stored: Evaluation = { items: split.forStore, decisions };
    const admitted = !denies(stored);
    if (!admitted) unspend(this.book, split.spent);
    rejoin(this.book, split, stored, sentAtMs, admitted);
  }

  /** The requests that waited for a take that is over, each with the takes it waited for: they arrive again. */
  resumed(): number[] {
    const resumed = this.goOn;
    this.goOn = [];
    return resumed;
  }

  /** The takes `split` began are over: who waited for them goes on. */
  private settled(split: LeaseSplit): void {
    if (this.book === undefined || split.takes.length === 0) return;
    settle(this.book, split);
    this.goOn.push(...this.waiting);
    this.waiting = [];
  }
}
