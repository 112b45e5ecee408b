/** What one simulated second (or one bucket of a chart) saw. */
export interface FleetSecond {
  readonly startMs: number;
  readonly endMs: number;
  /** Requests the fleet offered. */
  readonly offered: number;
  readonly admitted: number;
  /** Store calls sent (consumes: each a round trip). */
  readonly storeCalls: number;
  /** The fraction of the second's admissions each instance got: least, median, most. */
  readonly share: { readonly min: number; readonly median: number; readonly max: number };
}

/**
 * Adds one at `i`; nothing for a decision after the run's end (a store call sent before the end, decided after
 * it: counted by the bound, not in the run's seconds, whose admissions all fall within them).
 */
function bump(counts: Float64Array, i: number): void {
  const n = counts[i];
  if (n !== undefined) counts[i] = n + 1;
}

/** Counts per time slot of `slotMs`: offered, admitted (and by instance when asked) and store calls. */
export class Tally {
  readonly offered: Float64Array;
  readonly admitted: Float64Array;
  readonly storeCalls: Float64Array;
  private readonly byInstance: Float64Array[];

  constructor(
    readonly slotMs: number,
    readonly durationMs: number,
    instances: number,
    perInstance: boolean,
  ) {
    const slots = Math.ceil(durationMs / slotMs);
    this.offered = new Float64Array(slots);
    this.admitted = new Float64Array(slots);
    this.storeCalls = new Float64Array(slots);
    this.byInstance = perInstance ? Array.from({ length: slots }, () => new Float64Array(instances)) : [];
  }

  slot(ms: number): number {
    return Math.floor(ms / this.slotMs);
  }

  admit(ms: number, instance: number): void {
    const slot = this.slot(ms);
    bump(this.admitted, slot);
    const row = this.byInstance[slot];
    if (row !== undefined) bump(row, instance);
  }

  offer(ms: number): void {
    bump(this.offered, this.slot(ms));
  }

  call(ms: number): void {
    bump(this.storeCalls, this.slot(ms));
  }

  seconds(): FleetSecond[] {
    return [...this.offered.keys()].map((slot) => {
      const admitted = this.admitted[slot] as number;
      const row = [...(this.byInstance[slot] ?? [])].sort((a, b) => a - b);
      const at = (q: number) =>
        admitted === 0 || row.length === 0 ? 0 : (row[Math.floor(q * (row.length - 1))] as number) / admitted;
      return {
        startMs: slot * this.slotMs,
        endMs: Math.min((slot + 1) * this.slotMs, this.durationMs),
        offered: this.offered[slot] as number,
        admitted,
        storeCalls: this.storeCalls[slot] as number,
        share: { min: at(0), median: at(0.5), max: at(1) },
      };
    });
  }
}
