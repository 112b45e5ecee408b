import { type Criticality, CRITICALITIES } from '../policy/criticality.js';
import { Gradient2Limit, GRADIENT2_DEFAULTS } from './gradient2.js';
import type { SheddingSettings } from './shedding-options.js';

/** A request admitted in flight: given back once, with or without its latency (LoadShedder.release). */
export interface SheddingTicket {
  readonly startedMs: number;
  done: boolean;
}

/** How much the limit falls on each tick of the event-loop watch that sees the loop lag past the threshold. */
export const LOOP_OVERLOAD_FACTOR = 0.9;

/**
 * The limit learns from one sample per window, as with Netflix's WindowedLimit: the mean latency of the requests
 * that ended in it, at least SAMPLE_WINDOW_MS long and of at least MIN_WINDOW_SAMPLES requests (a window with
 * fewer stays open until it has them, where WindowedLimit drops it). Gradient2's tuning (a long-term average
 * over 600 samples) assumes it: fed each request, the long-term latency follows the queue up within a second,
 * the gradient stays at 1 and the limit climbs to its maximum under any overload.
 */
export const SAMPLE_WINDOW_MS = 1000;
export const MIN_WINDOW_SAMPLES = 10;

/**
 * This instance's admission by criticality: the requests in flight (from the guard to the end of the response)
 * against an adaptive limit (Gradient2Limit) learned from their latency, one mean a window. A request is
 * admitted while the requests in flight, itself included, stay within its criticality's ceiling: `critical`
 * ones the whole limit, `default` ones `limit × (1 − reserve)`, `sheddable` ones `limit × (1 − reserve)²` (and
 * none while the event loop lags past its threshold); each ceiling is at least 1, so an idle instance admits
 * anything. Time is the caller's (`now`, monotonic ms): no timer here.
 */
export class LoadShedder {
  private readonly gradient: Gradient2Limit;
  private flying = 0;
  private loopLagging = false;
  /** The window being gathered: since when, its latencies' sum and count, the most in flight it saw. */
  private windowStart: number;
  private windowSum = 0;
  private windowCount = 0;
  private windowInFlight = 0;
  private readonly shedCounts = new Map<Criticality, number>(CRITICALITIES.map((c) => [c, 0]));

  constructor(
    readonly settings: SheddingSettings,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.gradient = new Gradient2Limit({ ...settings, ...GRADIENT2_DEFAULTS });
    this.windowStart = now();
  }

  /** The current concurrency limit. */
  get limit(): number {
    return this.gradient.limit;
  }

  /** The requests admitted and not yet over. */
  get inFlight(): number {
    return this.flying;
  }

  /** The requests refused so far, by criticality. */
  shed(criticality: Criticality): number {
    return this.shedCounts.get(criticality) ?? 0;
  }

  /** The most requests of `criticality` this instance keeps in flight now. */
  ceiling(criticality: Criticality): number {
    const limit = this.gradient.limit;
    if (criticality === 'critical') return limit;
    if (criticality === 'sheddable' && this.loopLagging) return 0;
    const share = 1 - this.settings.reserve;
    return Math.max(1, Math.floor(limit * (criticality === 'default' ? share : share * share)));
  }

  /** Admits a request of `criticality` (a ticket to release when it is over), or refuses it (undefined). */
  admit(criticality: Criticality): SheddingTicket | undefined {
    if (this.flying + 1 > this.ceiling(criticality)) {
      this.shedCounts.set(criticality, this.shed(criticality) + 1);
      return undefined;
    }
    this.flying++;
    if (this.flying > this.windowInFlight) this.windowInFlight = this.flying;
    return { startedMs: this.now(), done: false };
  }

  /**
   * The request of `ticket` is over; its latency counts in the current window when `sample` (it did the app's
   * work: not refused by a rate limit). A ticket is released once; again does nothing.
   */
  release(ticket: SheddingTicket, sample: boolean): void {
    if (ticket.done) return;
    ticket.done = true;
    this.flying--;
    if (!sample) return;
    const now = this.now();
    this.windowSum += now - ticket.startedMs;
    this.windowCount++;
    if (now - this.windowStart < SAMPLE_WINDOW_MS || this.windowCount < MIN_WINDOW_SAMPLES) return;
    this.gradient.sample(this.windowSum / this.windowCount, this.windowInFlight);
    this.windowStart = now;
    this.windowSum = 0;
    this.windowCount = 0;
    this.windowInFlight = this.flying;
  }

  /** What the event-loop watch measured: past the threshold, sheddable requests are refused and the limit falls. */
  loopDelay(delayMs: number): void {
    const threshold = this.settings.maxEventLoopDelayMs;
    this.loopLagging = threshold > 0 && delayMs > threshold;
    if (this.loopLagging) this.gradient.reduce(LOOP_OVERLOAD_FACTOR);
  }

  /** Whether the last event-loop measure was past the threshold. */
  get lagging(): boolean {
    return this.loopLagging;
  }

  /**
   * The `Retry-After` of a refusal, whole seconds >= 1: the time the requests in flight take to drain at the
   * current limit, from the long-term latency.
   */
  retryAfterSeconds(): number {
    const drainMs = (this.gradient.longLatencyMs * this.flying) / Math.max(1, this.gradient.limit);
    return Math.max(1, Math.ceil(drainMs / 1000));
  }
}
