import type { AdaptiveLimit } from './ceiling-shedder.js';

/** Netflix's Log10RootFunction (baseline 0): max(1, ⌊log10 n⌋), so 1 below a limit of 100, 2 up to 999. */
const log10 = (n: number): number => Math.max(1, Math.floor(Math.log10(Math.max(1, n))));

/** The bounds and start of a VegasLimit, and how often it probes for a new no-load latency. */
export interface VegasSettings {
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly initialLimit: number;
  /** Probe every probeMultiplier × limit samples, jittered by a factor of 0.5 to 1 (Netflix: 30); 0: never. */
  readonly probeMultiplier: number;
}

/**
 * Netflix's VegasLimit (concurrency-limits), for the simulation only: the no-load latency is the least sample seen,
 * the queue is `limit × (1 − noLoad / sample)`, and with `step = log10(limit)` the limit grows by 6 × step while the
 * queue is at most `step`, by `step` while it is below 3 × step (alpha), and falls by `step` once it is above 6 ×
 * step (beta); not at all while fewer than half the limit are in flight. Netflix's smoothing is 1 (its default), its
 * drop signal is left out (a server does not see its clients' timeouts), and the limit stays within the `shedding`
 * bounds, as the library's Gradient2 limit does. Netflix's current VegasLimit also probes: every 30 × limit samples
 * (jittered) it takes the sample as the no-load latency anew; `probeMultiplier` 0 leaves that out, so the least
 * sample ever seen stays the no-load latency.
 */
export class VegasLimit implements AdaptiveLimit {
  private estimate: number;
  private noLoadMs = 0;
  private probeCount = 0;
  private probeJitter: number;

  constructor(
    private readonly settings: VegasSettings,
    private readonly random: () => number,
  ) {
    this.estimate = Math.min(settings.maxLimit, Math.max(settings.minLimit, settings.initialLimit));
    this.probeJitter = this.jitter();
  }

  /** The current limit: a whole number of requests in flight, within the bounds. */
  get limit(): number {
    return Math.floor(this.estimate);
  }

  /** The no-load latency (ms) the samples are compared with; 0 before the first sample. */
  get noLoadLatencyMs(): number {
    return this.noLoadMs;
  }

  /** One request's latency `rttMs`, finished while `inFlight` requests (itself included) were in flight. */
  sample(rttMs: number, inFlight: number): number {
    if (!(rttMs > 0)) rttMs = 1e-3;
    if (this.settings.probeMultiplier > 0) {
      this.probeCount++;
      if (this.probeJitter * this.settings.probeMultiplier * this.estimate <= this.probeCount) {
        this.probeJitter = this.jitter();
        this.probeCount = 0;
        this.noLoadMs = rttMs;
        return this.limit;
      }
    }
    if (this.noLoadMs === 0 || rttMs < this.noLoadMs) {
      this.noLoadMs = rttMs;
      return this.limit;
    }
    if (inFlight * 2 < this.estimate) return this.limit;
    const queue = Math.ceil(this.estimate * (1 - this.noLoadMs / rttMs));
    const step = log10(this.limit);
    let next: number;
    if (queue <= step) next = this.estimate + 6 * step;
    else if (queue < 3 * step) next = this.estimate + step;
    else if (queue > 6 * step) next = this.estimate - step;
    else return this.limit;
    this.estimate = Math.min(this.settings.maxLimit, Math.max(this.settings.minLimit, next));
    return this.limit;
  }

  private jitter(): number {
    return 0.5 + this.random() * 0.5;
  }
}
