import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A dependency of fixed capacity (a database pool, a downstream API): `capacity` calls are served at once, each
 * for `serviceMs`, the others wait in arrival order. For each call it records how many calls were ahead of it
 * (served or waiting) when it arrived, by the caller's label: the queueing a request met, as a count.
 */
export class LimitedDependency {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  readonly ahead = new Map<string, number[]>();

  constructor(
    readonly capacity: number,
    readonly serviceMs: number,
  ) {}

  async call(label: string): Promise<void> {
    const seen = this.ahead.get(label) ?? [];
    seen.push(this.busy + this.waiting.length);
    this.ahead.set(label, seen);
    if (this.busy < this.capacity) this.busy++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    await sleep(this.serviceMs);
    const next = this.waiting.shift();
    if (next === undefined) this.busy--;
    else next(); // the slot passes straight to the next in line
  }

  /** The calls of `label` so far. */
  calls(label: string): number {
    return this.ahead.get(label)?.length ?? 0;
  }

  /** The median of the calls ahead of `label`'s calls when they arrived. */
  medianAhead(label: string): number {
    const sorted = [...(this.ahead.get(label) ?? [])].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? 0;
  }

  maxAhead(label: string): number {
    return Math.max(0, ...(this.ahead.get(label) ?? []));
  }
}
