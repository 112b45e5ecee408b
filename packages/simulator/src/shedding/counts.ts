import { CRITICALITIES, type Criticality } from '../../../../lib/policy/criticality.js';

/** A count for each criticality. */
export type ByCriticality = Readonly<Record<Criticality, number>>;

/** Latency percentiles (ms) of a set of responses; zeros when there are none. */
export interface Latency {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** What one slot of a run (a second, by default) saw. */
export interface SheddingSlot {
  readonly startMs: number;
  readonly endMs: number;
  /** Requests sent in the slot, by criticality. */
  readonly offered: ByCriticality;
  /** Requests refused (503) in the slot, by criticality. */
  readonly shed: ByCriticality;
  /** Responses that reached their client within its timeout, ended in the slot, by criticality. */
  readonly good: ByCriticality;
  /** Responses that ended in the slot after their client had left (work the dependency did for nobody). */
  readonly late: number;
  /** The response times of the critical requests sent in the slot and admitted, served in the run or after it. */
  readonly critical: Latency;
  /** The limit, averaged over the slot's ticks (NaN without shedding). */
  readonly limit: number;
  /** Requests in flight (admitted, not over), averaged over the slot's ticks. */
  readonly inFlight: number;
}

/** Where the limit stood at one tick (every TICK_MS). */
export interface SheddingTick {
  readonly atMs: number;
  /** NaN without shedding. */
  readonly limit: number;
  readonly inFlight: number;
  /** Requests waiting in the dependency's queue. */
  readonly queued: number;
}

/** How often the limit and the requests in flight are read. */
export const TICK_MS = 100;

const zeros = (): Record<Criticality, number> => ({ critical: 0, default: 0, sheddable: 0 });

/** The nearest-rank percentile `q` (0–1) of sorted `values`. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

export function latencyOf(values: readonly number[]): Latency {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (ms: number) => Math.round(ms * 10) / 10;
  return {
    count: sorted.length,
    p50: r(percentile(sorted, 0.5)),
    p99: r(percentile(sorted, 0.99)),
    max: r(sorted[sorted.length - 1] ?? 0),
  };
}

/** A run's counts per slot of `slotMs`, and its totals (which also hold what ends after the last slot). */
export class SheddingCounts {
  readonly offered: Record<Criticality, number>[];
  readonly shed: Record<Criticality, number>[];
  readonly good: Record<Criticality, number>[];
  readonly late: number[];
  readonly criticalMs: number[][];
  readonly ticks: SheddingTick[] = [];
  readonly total = { offered: zeros(), shed: zeros(), good: zeros(), late: 0, criticalMs: [] as number[] };

  constructor(
    readonly slotMs: number,
    readonly durationMs: number,
  ) {
    const n = Math.ceil(durationMs / slotMs);
    this.offered = Array.from({ length: n }, zeros);
    this.shed = Array.from({ length: n }, zeros);
    this.good = Array.from({ length: n }, zeros);
    this.late = new Array<number>(n).fill(0);
    this.criticalMs = Array.from({ length: n }, () => []);
  }

  private slot(ms: number): number {
    return Math.floor(ms / this.slotMs);
  }

  offer(atMs: number, c: Criticality): void {
    this.total.offered[c]++;
    const row = this.offered[this.slot(atMs)];
    if (row !== undefined) row[c]++;
  }

  refuse(atMs: number, c: Criticality): void {
    this.total.shed[c]++;
    const row = this.shed[this.slot(atMs)];
    if (row !== undefined) row[c]++;
  }

  /** A response at `atMs` to a request sent at `sentMs`: goodput when its client still waited. */
  respond(atMs: number, sentMs: number, c: Criticality, timeoutMs: number): void {
    const slot = this.slot(atMs);
    if (atMs - sentMs <= timeoutMs) {
      this.total.good[c]++;
      const row = this.good[slot];
      if (row !== undefined) row[c]++;
    } else {
      this.total.late++;
      if (slot < this.late.length) this.late[slot] = (this.late[slot] ?? 0) + 1;
    }
    if (c === 'critical') {
      this.total.criticalMs.push(atMs - sentMs);
      this.criticalMs[this.slot(sentMs)]?.push(atMs - sentMs);
    }
  }

  tick(tick: SheddingTick): void {
    this.ticks.push(tick);
  }

  slots(): SheddingSlot[] {
    return this.offered.map((offered, i) => {
      const startMs = i * this.slotMs;
      const endMs = Math.min(startMs + this.slotMs, this.durationMs);
      const ticks = this.ticks.filter((t) => t.atMs > startMs && t.atMs <= endMs);
      const mean = (f: (t: SheddingTick) => number) =>
        ticks.length === 0 ? NaN : ticks.reduce((sum, t) => sum + f(t), 0) / ticks.length;
      return {
        ...{ startMs, endMs, offered, shed: this.shed[i] ?? zeros(), good: this.good[i] ?? zeros() },
        ...{ late: this.late[i] ?? 0, critical: latencyOf(this.criticalMs[i] ?? []) },
        ...{ limit: mean((t) => t.limit), inFlight: mean((t) => t.inFlight) },
      };
    });
  }
}

/** The sum of a count over the criticalities. */
export const sumOf = (counts: ByCriticality): number => CRITICALITIES.reduce((n, c) => n + counts[c], 0);
