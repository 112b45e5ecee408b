import { type HeapEntry, IndexedHeap } from './indexed-heap.js';

/**
 * How many fair keys without a waiter an order remembers at most. A key is remembered only while its last turn
 * ends ahead of the order's virtual time, so that coming straight back does not put it before the keys still
 * waiting (a client that sends one request at a time would otherwise be served every time). Past this many, the
 * oldest is forgotten and may come back one turn early, no more. So an order's memory is bounded however many
 * fair keys pass through, and a thousand tenants served within one turn is more than a shared budget meets.
 */
export const REMEMBERED_FAIR_KEYS = 1000;

/** One waiter's place: its fair key, its share of a turn (cost / weight) and its arrival, which breaks ties. */
interface Turn<T> {
  readonly value: T;
  readonly fairKey: string;
  readonly share: number;
  readonly arrival: number;
}

/** A fair key with waiters: they go in arrival order, and only the first of them has a start tag. */
interface WaitingKey<T> extends HeapEntry {
  readonly turns: Set<Turn<T>>;
  /** The start tag of its first waiter. */
  start: number;
  /** The arrival of its first waiter. */
  arrival: number;
}

const before = <T>(a: WaitingKey<T>, b: WaitingKey<T>): boolean =>
  a.start < b.start || (a.start === b.start && a.arrival < b.arrival);

/**
 * The order in which the waiters of one policy and key are served: start-time fair queuing over their
 * `fairKey`s. The first waiter of a fair key starts at the later of the queue's virtual time and the end of its
 * key's previous turn, and ends `cost / weight` after it; the fair key whose first waiter starts first is served
 * (ties in arrival order). So the waiters of one fair key keep their order, while different fair keys take turns
 * in proportion to their weights, in units: a tenant that queues fifty requests is served beside the others, not
 * before them. Waiters without a fair key share one (first come, first served among themselves).
 *
 * A start tag is given only to a fair key's first waiter, when it becomes first: a waiter that leaves unserved
 * (aborted, refused) never ends a turn, so it pushes no later turn of its key forward. Fair keys are kept while
 * they have waiters, and after it only while their last turn is still ahead (at most REMEMBERED_FAIR_KEYS).
 */
export class FairOrder<T> {
  /**
   * The start tag of the waiter served last: a fair key that was idle starts from here (or where its remembered
   * last turn ends), with no credit saved up from its past.
   */
  private virtualNow = 0;
  private arrivals = 0;
  private readonly turns = new Map<T, Turn<T>>();
  private readonly waiting = new Map<string, WaitingKey<T>>();
  private readonly firsts = new IndexedHeap<WaitingKey<T>>(before);
  /** Fair keys without waiters whose last turn ends after virtualNow: the end of it, oldest first. */
  private readonly remembered = new Map<string, number>();

  /** Queues `value` for `fairKey` with `cost` units at `weight`. */
  arrive(value: T, fairKey: string, cost: number, weight: number): void {
    // A cost of 0 still takes its turn (a tie would otherwise always go to the earlier fair key).
    const turn = { value, fairKey, share: Math.max(cost, Number.MIN_VALUE) / weight, arrival: this.arrivals++ };
    this.turns.set(value, turn);
    const key = this.waiting.get(fairKey);
    if (key !== undefined) {
      key.turns.add(turn);
      return;
    }
    const start = Math.max(this.virtualNow, this.remembered.get(fairKey) ?? 0);
    this.remembered.delete(fairKey);
    const created = { turns: new Set([turn]), start, arrival: turn.arrival, heapIndex: -1 };
    this.waiting.set(fairKey, created);
    this.firsts.push(created);
  }

  /** The waiter whose turn comes first. */
  first(): T | undefined {
    return this.firsts.peek()?.turns.values().next().value?.value;
  }

  /** `value`, first of its fair key, was served: its turn is over, and virtual time moves to its start. */
  served(value: T): void {
    const turn = this.turns.get(value);
    const key = turn && this.waiting.get(turn.fairKey);
    if (turn === undefined || key === undefined) return;
    this.virtualNow = Math.max(this.virtualNow, key.start);
    this.take(turn, key, key.start + turn.share);
  }

  /** `value` left unserved, or was served already: what it did not use goes to the next waiter of its key. */
  left(value: T): void {
    const turn = this.turns.get(value);
    const key = turn && this.waiting.get(turn.fairKey);
    if (turn === undefined || key === undefined) return;
    const isFirst = key.turns.values().next().value === turn;
    if (isFirst) this.take(turn, key, key.start);
    else {
      this.turns.delete(value);
      key.turns.delete(turn);
    }
  }

  /** The waiters, in arrival order. */
  values(): IterableIterator<T> {
    return this.turns.keys();
  }

  /** Fair keys kept (with waiters, or remembered), for tests and diagnostics. */
  get size(): number {
    return this.waiting.size + this.remembered.size;
  }

  /** Takes out `turn`, the first of `key`; the next waiter of its key starts at `end`, or the key is idle. */
  private take(turn: Turn<T>, key: WaitingKey<T>, end: number): void {
    this.turns.delete(turn.value);
    key.turns.delete(turn);
    const next = key.turns.values().next().value;
    if (next !== undefined) {
      key.start = Math.max(this.virtualNow, end);
      key.arrival = next.arrival;
      this.firsts.update(key);
      return;
    }
    this.waiting.delete(turn.fairKey);
    this.firsts.remove(key);
    this.remember(turn.fairKey, end);
  }

  /** Remembers where an idle fair key's last turn ends, while that is ahead; forgets the oldest past the bound. */
  private remember(fairKey: string, end: number): void {
    // Those whose turn virtual time has passed go first, from the oldest (each once: O(1) for each remembered).
    for (const [oldest, oldestEnd] of this.remembered) {
      if (oldestEnd > this.virtualNow) break;
      this.remembered.delete(oldest);
    }
    if (end <= this.virtualNow) return;
    const oldest = this.remembered.keys().next();
    if (this.remembered.size >= REMEMBERED_FAIR_KEYS && oldest.done !== true) this.remembered.delete(oldest.value);
    this.remembered.set(fairKey, end);
  }
}
