import type { ResolvedPolicy } from '../../../../lib/policy/policy.types.js';
import { BoundCheck } from './bounds.js';
import type { FleetOptions } from './options.js';
import { Tally } from './tally.js';

/** One whole window of a window algorithm's run: requests offered in it, and units admitted in it. */
export interface FleetWindow {
  readonly offered: number;
  readonly admitted: number;
}

/** The chart's slot: 1/100 of the run, rounded to an easily read width (at least 10 ms). */
function chartSlotMs(durationMs: number): number {
  const nice = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000];
  return nice.find((ms) => ms >= durationMs / 100) ?? 60_000;
}

/**
 * What a fleet run counts, by the ms (since the start) of each event: requests offered, admissions (checked
 * against the bound as they come, per second, per chart slot and per window), store calls, and per instance the
 * units the store counted for it against those it admitted (an admission beyond them is `overspent`).
 */
export class FleetCounts {
  readonly seconds: Tally;
  readonly slots: Tally;
  readonly bound: BoundCheck;
  readonly windows: { offered: number; admitted: number }[];
  readonly grantedBy: Float64Array;
  readonly admittedAtMs: number[] | undefined;
  overspent = 0;
  private readonly admittedBy: Float64Array;

  constructor(
    private readonly options: FleetOptions,
    policy: ResolvedPolicy,
    record: boolean,
  ) {
    const { durationMs, instances, windowMs } = options;
    this.seconds = new Tally(1000, durationMs, instances, true);
    this.slots = new Tally(chartSlotMs(durationMs), durationMs, instances, false);
    this.bound = new BoundCheck(policy);
    this.windows = Array.from({ length: Math.floor(durationMs / windowMs) }, () => ({ offered: 0, admitted: 0 }));
    this.grantedBy = new Float64Array(instances);
    this.admittedBy = new Float64Array(instances);
    this.admittedAtMs = record ? [] : undefined;
  }

  offer(ms: number): void {
    this.seconds.offer(ms);
    this.slots.offer(ms);
    const window = this.windows[Math.floor(ms / this.options.windowMs)];
    if (window !== undefined) window.offered++;
  }

  call(ms: number): void {
    this.seconds.call(ms);
    this.slots.call(ms);
  }

  /** The store counted `units` for `instance` (a consume it allowed: its cost, or what a take got). */
  granted(instance: number, units: number): void {
    this.grantedBy[instance] = (this.grantedBy[instance] as number) + units;
  }

  admit(ms: number, instance: number): void {
    this.admittedBy[instance] = (this.admittedBy[instance] as number) + 1;
    if ((this.admittedBy[instance] as number) > (this.grantedBy[instance] as number)) this.overspent++;
    this.admittedAtMs?.push(ms);
    this.bound.admit(ms);
    this.seconds.admit(ms, instance);
    this.slots.admit(ms, instance);
    const window = this.windows[Math.floor(ms / this.options.windowMs)];
    if (window !== undefined) window.admitted++;
  }
}
