/**
 * The order in which the waiters of one policy and key are served: start-time fair queuing over their
 * `fairKey`s. Each waiter gets a start tag, the later of the queue's virtual time and the end of its fair key's
 * previous waiter, and ends `cost / weight` after it; the smallest start is served first (ties in arrival
 * order). So the waiters of one fair key keep their order, while different fair keys take turns in proportion
 * to their weights, in units: a tenant that queues fifty requests is served beside the others, not before them.
 * Waiters without a fair key share one (first come, first served among themselves).
 */
export class FairOrder {
  /** The start tag of the waiter served last: a fair key that was idle starts from here, not from its past. */
  private virtualNow = 0;
  /** Per fair key, the finish tag of its latest waiter. */
  private readonly finishes = new Map<string, number>();

  /** The start tag of a waiter arriving now with `cost` units for `fairKey`, at `weight`. */
  arrive(fairKey: string, cost: number, weight: number): number {
    const start = Math.max(this.virtualNow, this.finishes.get(fairKey) ?? 0);
    // A cost of 0 still takes its turn (a tie would otherwise always go to the earlier fair key).
    this.finishes.set(fairKey, start + Math.max(cost, Number.MIN_VALUE) / weight);
    return start;
  }

  /** A waiter with start tag `start` was served: virtual time moves to it. */
  served(start: number): void {
    this.virtualNow = Math.max(this.virtualNow, start);
  }
}
