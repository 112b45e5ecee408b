import type { Criticality } from '../../../../lib/policy/criticality.js';
import type { SheddingTicket } from '../../../../lib/shedding/load-shedder.js';
import type { SheddingSettings } from '../../../../lib/shedding/shedding-options.js';

/** A concurrency limit learned from latency samples: Gradient2Limit's shape (lib/shedding/gradient2.ts). */
export interface AdaptiveLimit {
  /** The current limit, a whole number of requests in flight. */
  readonly limit: number;
  /** One request's latency `rttMs`, finished while `inFlight` requests (itself included) were in flight. */
  sample(rttMs: number, inFlight: number): number;
}

/**
 * LoadShedder's admission by criticality over another limit than its own Gradient2Limit (the simulator's Vegas):
 * the same ceilings (`critical` the whole limit, `default` `limit × (1 − reserve)`, `sheddable`
 * `limit × (1 − reserve)²`, each at least 1), the same tickets, each request's latency taken from its admission
 * to its release and given to the limit at once (Vegas learns per request; LoadShedder windows its samples for
 * Gradient2). No event-loop watch: the simulation has no loop to lag. test/shedding-limits.spec.ts holds its
 * ceilings and admissions to LoadShedder's.
 */
export class CeilingShedder {
  private flying = 0;

  constructor(
    readonly settings: SheddingSettings,
    readonly adaptive: AdaptiveLimit,
    private readonly now: () => number,
  ) {}

  get limit(): number {
    return this.adaptive.limit;
  }

  get inFlight(): number {
    return this.flying;
  }

  /** The most requests of `criticality` kept in flight now. */
  ceiling(criticality: Criticality): number {
    const limit = this.adaptive.limit;
    if (criticality === 'critical') return limit;
    const share = 1 - this.settings.reserve;
    return Math.max(1, Math.floor(limit * (criticality === 'default' ? share : share * share)));
  }

  admit(criticality: Criticality): SheddingTicket | undefined {
    if (this.flying + 1 > this.ceiling(criticality)) return undefined;
    this.flying++;
    return { startedMs: this.now(), done: false };
  }

  release(ticket: SheddingTicket, sample: boolean): void {
    if (ticket.done) return;
    ticket.done = true;
    if (sample) this.adaptive.sample(this.now() - ticket.startedMs, this.flying);
    this.flying--;
  }
}
