import type { RateLimitDecision } from '../../../../lib/policy/policy.types.js';
import { MemoryRateLimitStore } from '../../../../lib/stores/memory/memory.store.js';
import type {
  EngineStore,
  EngineStoreItem,
  RateLimitChangeListener,
  RateLimitStoreChanges,
} from '../../../../lib/stores/engine-store.js';
import type { Clock } from '../../../../lib/util/clock.js';
import { EventQueue } from './event-queue.js';

/** 2023-11-14 rounded up to a whole hour: a realistic clock, at an edge of every window that divides an hour. */
export const EPOCH_MS = 1_700_002_800_000;

/** The simulation's time: µs since the start; the clock every engine and the store read is its whole ms. */
export class VirtualClock implements Clock {
  us = 0;

  now(): number {
    return EPOCH_MS + this.ms;
  }

  /** Whole ms since the start. */
  get ms(): number {
    return Math.floor(this.us / 1000);
  }
}

/** A consume of one instance on its way: to the store, then (`decisions` set) back to the instance. */
export interface StoreCall {
  readonly instance: number;
  readonly items: readonly EngineStoreItem[];
  readonly reply: (decisions: RateLimitDecision[]) => void;
  decisions?: RateLimitDecision[];
}

/** The two halves of a round trip, each drawn when a call crosses it (run.ts: oneWayDelays). */
export interface OneWayDelays {
  readonly out: () => number;
  readonly back: () => number;
}

/**
 * The fleet's shared store in virtual time: the memory store on the simulation's clock, seen by every instance
 * as a store in another process (it grants leases, and the engine keeps its cache of denials). A consume
 * reaches the store after the way out (`toStore`), is decided then, and its reply reaches the instance after the
 * way back (`toReply`); run.ts takes both queues' events in time order. Nothing changes state outside decisions
 * here, so the feed of changes has nothing to announce and confirms delivery before each event, as Redis's feed
 * does while it is up: a cached denial answers until its retry-after.
 */
export class VirtualStore {
  readonly toStore = new EventQueue<StoreCall>();
  readonly toReply = new EventQueue<StoreCall>();
  private readonly memory: MemoryRateLimitStore;
  private readonly listeners = new Set<RateLimitChangeListener>();
  private readonly feed: RateLimitStoreChanges = {
    announce: async () => undefined,
    listen: async (listener) => {
      this.listeners.add(listener);
      return async () => {
        this.listeners.delete(listener);
      };
    },
  };

  constructor(
    private readonly clock: VirtualClock,
    private readonly delays: OneWayDelays,
    /** A call of `instance` went out (now). */
    private readonly sent: (instance: number) => void,
  ) {
    this.memory = new MemoryRateLimitStore({ clock });
  }

  /**
   * The store as instance `instance`'s engine sees it: consume goes over the simulated network; the others
   * (which a run of one policy and one item a request never calls) answer at once.
   */
  linkOf(instance: number): EngineStore {
    const memory = this.memory;
    return {
      grantsUpTo: true,
      changes: this.feed,
      consume: (items) =>
        new Promise<RateLimitDecision[]>((reply) => {
          this.toStore.push(this.clock.us + this.delays.out(), { instance, items, reply });
          this.sent(instance);
        }),
      peek: (items) => memory.peek(items),
      refund: (items) => memory.refund(items),
      reset: (items) => memory.reset(items),
    };
  }

  /** The store decides the earliest call that reached it (now), and sends its reply back; returns the call. */
  async decideNext(): Promise<StoreCall> {
    const call = this.toStore.pop() as StoreCall;
    call.decisions = await this.memory.consume(call.items);
    this.toReply.push(this.clock.us + this.delays.back(), call);
    return call;
  }

  /** The earliest reply reaches its instance (now): the engine that sent it goes on. */
  replyNext(): StoreCall {
    const call = this.toReply.pop() as StoreCall;
    call.reply(call.decisions ?? []);
    return call;
  }

  /** Every announcement so far has been delivered (there are none): the instances' cached denials stay trusted. */
  confirm(): void {
    const now = this.clock.now();
    for (const listener of this.listeners) listener.confirmed(now);
  }
}
