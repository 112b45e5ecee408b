import type { Logger } from '../util/logger.js';

import type { RateLimitStoreCall } from '../stores/engine-store.js';
import { withTimeout } from '../stores/store-timeout.js';
import { isDefect } from '../stores/store-defects.js';

/** The error of a store call refused at once because the store has been failing. */
export class RateLimitCircuitOpenError extends Error {
  constructor() {
    super('the store has been failing: the circuit breaker is open, fail modes apply without waiting');
    this.name = 'RateLimitCircuitOpenError';
  }
}

export interface CircuitBreakerOptions {
  /** Milliseconds per call. */
  timeoutMs: number;
  /** Consecutive failures that open the breaker. */
  threshold: number;
  /** Milliseconds between probes while open. */
  probeIntervalMs: number;
  /** A cheap call that succeeds when the store answers (PING); without one, a real call is let through. */
  probe?: () => Promise<unknown>;
  logger: Logger;
}

/**
 * Every store call under a timeout; after `threshold` consecutive failures, calls fail at once (so each
 * policy's fail mode applies without waiting for the timeout) while a background probe asks the store every
 * `probeIntervalMs`; the first answer closes the breaker. Opening and closing are logged once each.
 */
export class CircuitBreaker {
  private failures = 0;
  private open = false;
  private trial = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly counted = new WeakSet<object>();

  constructor(private readonly options: CircuitBreakerOptions) {}

  get isOpen(): boolean {
    return this.open;
  }

  // Not an async function: its frame would be one more object per store call. The two handlers are made once.
  run<T>(call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T> {
    if (this.open) {
      // Without a probe, one real call at a time tries the store once the interval has passed.
      if (this.options.probe !== undefined || !this.trial) return Promise.reject(new RateLimitCircuitOpenError());
      this.trial = false;
    }
    return withTimeout(call, this.options.timeoutMs).then(this.succeeded as (value: T) => T, this.failed);
  }

  private readonly succeeded = <T>(result: T): T => {
    if (this.open) this.close();
    this.failures = 0;
    return result;
  };

  private readonly failed = (error: unknown): never => {
    // One failed call that carried several requests (a PostgreSQL statement of gathered consumes) rejects
    // each of them with the same error: it is one failure of the store, not several in a row.
    // A defect (a programming error) is not the store failing: it never opens the breaker.
    if (!isDefect(error) && !this.isCounted(error)) this.failures++;
    if (this.open) this.schedule();
    else if (this.failures >= this.options.threshold) this.trip();
    throw error;
  };

  private isCounted(error: unknown): boolean {
    if (typeof error !== 'object' || error === null) return false;
    if (this.counted.has(error)) return true;
    this.counted.add(error);
    return false;
  }

  /** Stops probing (on shutdown). */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private trip(): void {
    this.open = true;
    this.options.logger.error(
      `Rate limiter store failed ${this.failures} times in a row: circuit open, fail modes apply without waiting; ` +
        `probing every ${this.options.probeIntervalMs} ms`,
    );
    this.schedule();
  }

  private close(): void {
    this.open = false;
    this.failures = 0;
    this.dispose();
    this.options.logger.log('Rate limiter store answers again: circuit closed');
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tryProbe();
    }, this.options.probeIntervalMs);
    this.timer.unref();
  }

  private async tryProbe(): Promise<void> {
    const { probe } = this.options;
    if (probe === undefined) {
      this.trial = true;
      return;
    }
    try {
      await withTimeout(probe, this.options.timeoutMs);
      this.close();
    } catch {
      this.schedule();
    }
  }
}
