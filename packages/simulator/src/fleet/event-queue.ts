/**
 * Events in time order (a binary min-heap): the earliest first, and of events at the same µs the one queued first,
 * so that a run is the same event for event whatever the heap's shape.
 * @example const q = new EventQueue<string>(); q.push(5, 'b'); q.push(5, 'c'); q.push(1, 'a'); q.pop() // 'a'
 */
export class EventQueue<T> {
  private readonly heap: { atUs: number; seq: number; value: T }[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  /** When the earliest event is due, or Infinity when there is none. */
  get nextUs(): number {
    return this.heap[0]?.atUs ?? Infinity;
  }

  push(atUs: number, value: T): void {
    const heap = this.heap;
    heap.push({ atUs, seq: this.seq++, value });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Takes the earliest event out (undefined when there is none). */
  pop(): T | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top?.value;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let first = i;
      if (left < heap.length && this.before(left, first)) first = left;
      if (right < heap.length && this.before(right, first)) first = right;
      if (first === i) break;
      this.swap(i, first);
      i = first;
    }
    return top.value;
  }

  private before(a: number, b: number): boolean {
    const x = this.heap[a] as { atUs: number; seq: number };
    const y = this.heap[b] as { atUs: number; seq: number };
    return x.atUs < y.atUs || (x.atUs === y.atUs && x.seq < y.seq);
  }

  private swap(a: number, b: number): void {
    const heap = this.heap;
    [heap[a], heap[b]] = [heap[b] as (typeof heap)[number], heap[a] as (typeof heap)[number]];
  }
}
