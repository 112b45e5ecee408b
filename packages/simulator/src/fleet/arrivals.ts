import type { ArrivalKind } from './options.js';
import { seeded } from './random.js';

/**
 * Each instance's share of the fleet's rate: ∝ 1 / (i + 1)^skew, so 0 is even and 1 is Zipf's (the first
 * instance offers about 19% of 100 instances' traffic).
 */
export function sharesOf(instances: number, skew: number): number[] {
  const weights = Array.from({ length: instances }, (_, i) => 1 / (i + 1) ** skew);
  const total = weights.reduce((sum, w) => sum + w, 0);
  return weights.map((w) => w / total);
}

/**
 * The arrivals of every instance, in time order: a min-heap of each instance's next arrival (µs after the
 * start). Evenly spaced streams start at a random phase; Poisson streams draw exponential gaps. One seeded
 * source of numbers for all, drawn in the order the arrivals are taken, so a seed replays the run.
 */
export class FleetArrivals {
  private readonly next: Float64Array;
  private readonly gapUs: Float64Array;
  /** Instance numbers ordered as a binary heap by their next arrival. */
  private readonly heap: Int32Array;
  private readonly random: () => number;

  constructor(
    shares: readonly number[],
    ratePerSecond: number,
    private readonly kind: ArrivalKind,
    seed: number,
  ) {
    this.random = seeded(seed);
    this.next = new Float64Array(shares.length);
    this.gapUs = new Float64Array(shares.length);
    this.heap = new Int32Array(shares.length);
    shares.forEach((share, i) => {
      const gap = share > 0 ? 1e6 / (ratePerSecond * share) : Infinity;
      this.gapUs[i] = gap;
      this.next[i] = kind === 'even' ? this.random() * gap : this.draw(gap);
      this.heap[i] = i;
    });
    for (let i = (shares.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  /** The instance whose arrival comes next. */
  get instance(): number {
    return this.heap[0] as number;
  }

  /** When (whole µs after the start) the next arrival comes. */
  get atUs(): number {
    return Math.floor(this.next[this.instance] as number);
  }

  /** Moves past the next arrival. */
  advance(): void {
    const i = this.instance;
    const gap = this.gapUs[i] as number;
    this.next[i] = (this.next[i] as number) + (this.kind === 'even' ? gap : this.draw(gap));
    this.down(0);
  }

  private draw(meanUs: number): number {
    return -Math.log(1 - this.random()) * meanUs;
  }

  private down(from: number): void {
    const { heap, next } = this;
    const n = heap.length;
    let i = from;
    const item = heap[i] as number;
    const at = next[item] as number;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && (next[heap[right] as number] as number) < (next[heap[left] as number] as number)) child = right;
      const childItem = heap[child] as number;
      if ((next[childItem] as number) >= at) break;
      heap[i] = childItem;
      i = child;
    }
    heap[i] = item;
  }
}
