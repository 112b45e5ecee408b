import type { RateLimitDecision } from '../policy/policy.types.js';
import { RateLimitExceededException, RateLimitUnavailableException } from '../responses/rate-limit-exceptions.js';
import type { RateLimitStoreItem } from '../stores/rate-limit-store.js';
import { FairOrder } from './fair-order.js';

/** The longest delay setTimeout keeps (2^31 − 1 ms, about 24.8 days); a longer retry-after is slept in parts. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Added to every sleep: timers may fire up to a millisecond early by the clock the store decides with (both are
 * rounded to whole ms), and a wake before the units are free would cost a second store call for one retry-after.
 */
const WAKE_MARGIN_MS = 1;

/**
 * How long a caller has waited is measured on the monotonic clock timers run on, not on the module's clock:
 * the module's clock dates decisions (and may be Redis TIME, or stepped); `maxWaitMs` is the caller's patience.
 */
const monotonicMs = (): number => performance.now();

/** How the queues reach the store: one item consumed or given back, failures reported by the caller. */
export interface AcquireStore {
  consume(item: RateLimitStoreItem): Promise<RateLimitDecision>;
  refund(item: RateLimitStoreItem): Promise<unknown>;
}

/**
 * One validated `acquire()`: what to consume, how long it may wait (ms), what may abort it, and whose turn it
 * takes among the waiters of its policy and key (`fairKey`, at `weight`; see FairOrder).
 */
export interface AcquireRequest extends RateLimitStoreItem {
  readonly maxWaitMs: number;
  readonly signal?: AbortSignal;
  readonly fairKey?: string;
  readonly weight?: number;
}

interface Waiter {
  readonly item: RateLimitStoreItem;
  /** The monotonic time past which the waiter may no longer wait for units. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (decision: RateLimitDecision) => void;
  readonly reject: (reason: unknown) => void;
  readonly onAbort: () => void;
  settled: boolean;
}

/** The rejection of a waiter the module's shutdown cut short: 503 where an HTTP request was waiting. */
const shutDown = (item: RateLimitStoreItem): Error => new RateLimitUnavailableException(item.policy.name, 1);

/**
 * The waiters of `RateLimitService.acquire()`, one queue per policy and key in this process, in turn by fair
 * key (FairOrder). Only the
 * head of a queue asks the store; when denied, it sleeps the store's `retryAfterMs` and asks again, and the
 * waiters behind it wait their turn without a store call: at most one store call per key per retry-after
 * from this process, and across processes one per waiting process. Queues exist only while they have waiters.
 */
export class AcquireQueues {
  private readonly queues = new Map<string, KeyQueue>();
  private closed = false;

  constructor(private readonly store: AcquireStore) {}

  /** Queues one acquire; see `RateLimitService.acquire` for what it resolves and rejects with. */
  acquire(request: AcquireRequest): Promise<RateLimitDecision> {
    const { policy, key, cost, maxWaitMs, signal, fairKey = '', weight = 1 } = request;
    const item = { policy, key, cost };
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(shutDown(item));
    // Policies with the same id share their stored state, whatever object or name they were given by.
    const id = JSON.stringify([policy.id, key]);
    let queue = this.queues.get(id);
    if (queue === undefined) {
      const created = new KeyQueue(this.store, () => {
        if (this.queues.get(id) === created) this.queues.delete(id);
      });
      this.queues.set(id, (queue = created));
    }
    return queue.enqueue(item, { deadline: monotonicMs() + maxWaitMs, signal, fairKey, weight });
  }

  /** Rejects every pending waiter and every later acquire (module shutdown); cancels the sleeps. */
  close(): void {
    this.closed = true;
    for (const queue of [...this.queues.values()]) queue.close();
  }

  /** Keys with waiters, for tests and diagnostics. */
  get size(): number {
    return this.queues.size;
  }

  /** Fair keys the queues keep, for tests and diagnostics. */
  get fairKeys(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.fairKeys;
    return count;
  }
}

/** When a waiter must be served by, what may abort it, and its turn (FairOrder). */
interface WaitTerms {
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  readonly fairKey: string;
  readonly weight: number;
}

/** The waiters of one policy and key, served in turn by fair key (first come, first served within one). */
class KeyQueue {
  /** Its waiters in turn; the first is the head, the only one that calls the store. */
  private readonly order = new FairOrder<Waiter>();
  /** The head's store call is on its way. */
  private calling = false;
  /** The head's sleep after a denial, when it wakes (monotonic ms) and the denial it sleeps on. */
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = 0;
  private denial: RateLimitDecision | undefined;

  constructor(
    private readonly store: AcquireStore,
    private readonly onIdle: () => void,
  ) {}

  enqueue(item: RateLimitStoreItem, terms: WaitTerms): Promise<RateLimitDecision> {
    const { deadline, signal } = terms;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        item,
        deadline,
        signal,
        resolve,
        reject,
        onAbort: () => this.abort(waiter),
        settled: false,
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.order.arrive(waiter, terms.fairKey, item.cost, terms.weight);
      if (this.timer !== undefined) this.refuseIfHopeless(waiter);
      else this.next();
    });
  }

  get fairKeys(): number {
    return this.order.size;
  }

  close(): void {
    this.wake();
    for (const waiter of [...this.order.values()]) this.finish(waiter, () => waiter.reject(shutDown(waiter.item)));
    this.next();
  }

  /** Lets the head call the store, unless a call is on its way or the head sleeps; forgets an empty queue. */
  private next(): void {
    if (this.calling || this.timer !== undefined) return;
    const head = this.order.first();
    if (head === undefined) this.onIdle();
    else void this.attempt(head);
  }

  private async attempt(head: Waiter): Promise<void> {
    this.calling = true;
    let decision: RateLimitDecision;
    try {
      decision = await this.store.consume(head.item);
    } catch (error) {
      // As consume(): the store's failure goes to the caller (it was reported); the next waiter asks anew.
      this.calling = false;
      this.finish(head, () => head.reject(error));
      this.next();
      return;
    }
    this.calling = false;
    if (head.settled) {
      // Aborted, or cut short by shutdown, while the call was on its way: give back what it took. A failed
      // refund was reported; the units then stay taken until they expire (under-admission only).
      if (decision.allowed && head.item.cost > 0) this.store.refund(head.item).catch(() => undefined);
    } else if (decision.allowed) {
      this.order.served(head);
      this.finish(head, () => head.resolve(decision));
    } else if (!(decision.retryAfterMs <= head.deadline - monotonicMs())) {
      // A cost that can never fit (Infinity), or a wait that would end past the deadline: no sleeping in vain.
      this.finish(head, () => head.reject(new RateLimitExceededException(decision)));
    } else {
      this.sleep(decision);
      return;
    }
    this.next();
  }

  /** The head sleeps the denial's retry-after (and the margin: never a busy loop), then asks again. */
  private sleep(denial: RateLimitDecision): void {
    const delayMs = Math.min(Math.max(0, denial.retryAfterMs) + WAKE_MARGIN_MS, MAX_TIMER_MS);
    this.denial = denial;
    this.wakeAt = monotonicMs() + delayMs;
    // Not unref'd: like any pending I/O, a waiting acquire keeps the process alive until it settles.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.denial = undefined;
      this.next();
    }, delayMs);
    const head = this.order.first();
    for (const waiter of [...this.order.values()]) if (waiter !== head) this.refuseIfHopeless(waiter);
  }

  /**
   * A waiter behind a sleeping head cannot be served before the head wakes: when its deadline comes first,
   * it is refused now, with the head's denial and the time until the head wakes — the least it would wait.
   */
  private refuseIfHopeless(waiter: Waiter): void {
    if (this.denial === undefined || waiter.deadline >= this.wakeAt) return;
    const decision = { ...this.denial, retryAfterMs: Math.max(1, Math.ceil(this.wakeAt - monotonicMs())) };
    this.finish(waiter, () => waiter.reject(new RateLimitExceededException(decision)));
  }

  private abort(waiter: Waiter): void {
    if (waiter.settled) return;
    if (this.order.first() === waiter) this.wake();
    this.finish(waiter, () => waiter.reject(waiter.signal?.reason));
    this.next();
  }

  /** Cancels the head's sleep. */
  private wake(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.denial = undefined;
  }

  /** Settles a waiter once and takes it out of the queue. */
  private finish(waiter: Waiter, settle: () => void): void {
    if (waiter.settled) return;
    waiter.settled = true;
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    this.order.left(waiter);
    settle();
  }
}
