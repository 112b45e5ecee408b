/** The bounds and tuning of an adaptive concurrency limit (Gradient2Limit). */
export interface Gradient2Settings {
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly initialLimit: number;
  /** How much slower than the long-term latency a sample may be before the limit falls (1.5: 50% slower). */
  readonly tolerance: number;
  /** How far one sample moves the limit toward its new estimate (0–1). */
  readonly smoothing: number;
  /** Samples the long-term latency averages over (an exponential moving average). */
  readonly longWindow: number;
}

/** The requests the limit leaves room for beyond the estimate, so that it can grow (Netflix's default). */
const QUEUE_ALLOWANCE = 4;

export const GRADIENT2_DEFAULTS = { tolerance: 1.5, smoothing: 0.2, longWindow: 600 } as const;

/** The long-term latency: a plain average of the first `warmup` samples, then an exponential one. */
class LongLatency {
  private count = 0;
  private value = 0;

  constructor(
    private readonly window: number,
    private readonly warmup = 10,
  ) {}

  get ms(): number {
    return this.value;
  }

  add(sampleMs: number): number {
    if (this.count < this.warmup) {
      this.count++;
      this.value += (sampleMs - this.value) / this.count;
    } else {
      const factor = 2 / (this.window + 1);
      this.value = this.value * (1 - factor) + sampleMs * factor;
    }
    return this.value;
  }

  /** Pulls the average toward recent samples at once (after a long overload, latency is back to normal). */
  decay(by: number): void {
    this.value *= by;
  }
}

/**
 * Netflix's Gradient2 adaptive concurrency limit (concurrency-limits, Gradient2Limit): the limit follows the
 * ratio of the long-term latency to each new sample's. While a sample is no more than `tolerance` times the
 * long-term latency the gradient is 1 and the limit grows by a small queue allowance (4 requests, as
 * Netflix's default); when samples run slower (requests queue behind a saturated dependency) the gradient
 * falls (to no less than 0.5) and so does the limit, smoothed (a sample moves it a fifth of the way). It does
 * not grow while the instance is application-limited (fewer than half the limit in flight), and a long-term
 * latency left high by a past overload decays when samples run twice as fast. Pure: the caller gives every sample; no clock.
 * docs/shedding-load.md explains the choice over Vegas with the simulation's numbers.
 */
export class Gradient2Limit {
  private estimate: number;
  private readonly long: LongLatency;

  constructor(private readonly settings: Gradient2Settings) {
    this.estimate = Math.min(settings.maxLimit, Math.max(settings.minLimit, settings.initialLimit));
    this.long = new LongLatency(settings.longWindow);
  }

  /** The current limit: a whole number of requests in flight, within the bounds. */
  get limit(): number {
    return Math.floor(this.estimate);
  }

  /** The long-term latency (ms) the samples are compared with; 0 before the first sample. */
  get longLatencyMs(): number {
    return this.long.ms;
  }

  /** One request's latency `rttMs`, finished while `inFlight` requests (itself included) were in flight. */
  sample(rttMs: number, inFlight: number): number {
    if (!(rttMs > 0)) rttMs = 1e-3; // a zero-length sample still says "no queueing"
    const long = this.long.add(rttMs);
    if (long / rttMs > 2) this.long.decay(0.95);
    if (inFlight < this.estimate / 2) return this.limit;
    const gradient = Math.max(0.5, Math.min(1, (this.settings.tolerance * long) / rttMs));
    const next = this.estimate * gradient + QUEUE_ALLOWANCE;
    const smoothed = this.estimate * (1 - this.settings.smoothing) + next * this.settings.smoothing;
    this.estimate = Math.min(this.settings.maxLimit, Math.max(this.settings.minLimit, smoothed));
    return this.limit;
  }

  /** An overload seen outside latency (the event loop lags): the limit falls by `factor` (0–1), within bounds. */
  reduce(factor: number): number {
    this.estimate = Math.max(this.settings.minLimit, this.estimate * factor);
    return this.limit;
  }
}
