import type { ResolvedPolicy } from '../../../../lib/policy/policy.types.js';

/**
 * What the algorithm promises of every admission, and the most the fleet came to: for a fixed window, units
 * per window; for the sliding window counter, its estimate (this window's units + the last window's weighted by
 * the part of it still in the trailing window) at each admission; for token bucket and GCRA, over any interval,
 * units beyond the refill (`rate × length`), which the capacity bounds.
 */
export interface FleetBound {
  readonly kind: 'per-window' | 'sliding-estimate' | 'any-interval';
  readonly most: number;
  readonly allowed: number;
  /** One line for a table: `most 500000 per 1s window (limit 500000)`. */
  readonly text: string;
}

/**
 * Checks the fleet's admissions as they happen (in time order, at the time of the clock that decided them:
 * the store's for a store call, the instance's for a unit spent from a lease), in O(1) each.
 */
export class BoundCheck {
  private window = -1;
  private current = 0;
  private previous = 0;
  private worst = 0;
  /** Token bucket and GCRA: admissions so far, and the least of `i − rate × t_i` over them. */
  private count = 0;
  private least = Infinity;
  private readonly ratePerMs: number;

  constructor(private readonly policy: ResolvedPolicy) {
    this.ratePerMs = policy.limit / policy.windowMs;
  }

  /** One unit admitted at `ms` (after a start that is a window edge). */
  admit(ms: number): void {
    const { windowMs: w, algorithm } = this.policy;
    if (algorithm === 'token-bucket' || algorithm === 'gcra') {
      this.least = Math.min(this.least, this.count - this.ratePerMs * ms);
      this.count++;
      this.worst = Math.max(this.worst, this.count - this.ratePerMs * ms - this.least);
      return;
    }
    const index = Math.floor(ms / w);
    if (index !== this.window) {
      this.previous = index === this.window + 1 ? this.current : 0;
      this.current = 0;
      this.window = index;
    }
    this.current++;
    const used =
      algorithm === 'sliding-window-counter'
        ? this.current + (this.previous * (w - (ms - index * w))) / w
        : this.current;
    this.worst = Math.max(this.worst, used);
  }

  result(): FleetBound {
    const { algorithm, limit, capacity, windowMs } = this.policy;
    const most = this.worst;
    const shown = Math.round(most * 100) / 100;
    if (algorithm === 'token-bucket' || algorithm === 'gcra') {
      return {
        kind: 'any-interval',
        most,
        allowed: capacity,
        text: `most beyond rate × interval ${shown} (burst ${capacity})`,
      };
    }
    const kind = algorithm === 'sliding-window-counter' ? 'sliding-estimate' : 'per-window';
    const what = kind === 'per-window' ? `per ${windowMs} ms window` : 'estimate at an admission';
    return { kind, most, allowed: limit, text: `most ${shown} ${what} (limit ${limit})` };
  }
}
