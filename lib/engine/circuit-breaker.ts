import type { Logger } from '@nestjs/common';

import type { RateLimitStoreCall } from '../stores/rate-limit-store.js';
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

  async run<T>(call: (timing: RateLimitStoreCall) => Promise<T>): Promise<T> {
    if (this.open) {
      // Without a probe, one real call at a time tries the store once the interval has passed.
      if (this.options.probe !== undefined || !this.trial) throw new RateLimitCircuitOpenError();
      this.trial = false;
    }
    try {
      const result = await withTimeout(call, this.options.timeoutMs);
      if (this.open) this.close();
      this.failures = 0;
      return result;
    } catch (error) {
      // One failed call that carried several requests (a PostgreSQL statement of gathered consumes) rejects
      // each of them with the same error: it is one failure of the store, not several in a row.
      // A defect (a programming error) is not the store failing: it never opens the breaker.
      if (!isDefect(error) && !this.isCounted(error)) this.failures++;
      if (this.open) this.schedule();
      else if (this.failures >= this.options.threshold) this.trip();
      throw error;
    }
  }

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

/** The error of a store call that took longer than the module's `timeout`. */
export class RateLimitStoreTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`store call timed out after ${timeoutMs} ms`);
    this.name = 'RateLimitStoreTimeoutError';
  }
}

/**
 * Runs `call` and settles with it, or rejects with RateLimitStoreTimeoutError when the store has not answered
 * within `timeoutMs`. Only the store's time counts, not the app's: when the event loop is busy (an app
 * overloaded by its own traffic), a command may wait to be written (ioredis auto-pipelining writes in the
 * loop's check phase) and a reply that has arrived may wait to be read (timers run before Node reads its
 * sockets). So the clock starts in the check phase after the call, when what it issued has been written, and
 * when the timer fires it only arms the verdict: the loop's next poll phase reads whatever has arrived, and
 * the call times out in the check phase after it only if it is still unanswered. A store that does not answer
 * still fails after `timeoutMs` and a turn or two of the loop. A store that queues the call before sending it
 * says so through `timing` (RateLimitStoreCall): the clock then starts after `sent()`.
 */
export function withTimeout<T>(call: (timing: RateLimitStoreCall) => Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const clock = new CallClock(timeoutMs, reject);
    let pending: Promise<T>;
    try {
      pending = call(clock);
    } catch (error) {
      if (clock.settle()) reject(error);
      return;
    }
    pending.then(
      (value) => clock.settle() && resolve(value),
      (error: unknown) => clock.settle() && reject(error),
    );
    clock.called();
  });
}

/** The timeout of one call of withTimeout, and the RateLimitStoreCall its store sees. */
class CallClock implements RateLimitStoreCall {
  private settled = false;
  /** queued(): the clock waits for sent(); sent(): the clock runs (for good) */
  private phase: 'called' | 'queued' | 'sent' = 'called';
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  constructor(
    readonly timeoutMs: number,
    private readonly reject: (error: unknown) => void,
  ) {}

  queued(): void {
    if (this.phase !== 'called') return;
    this.phase = 'queued';
    this.stop();
  }

  sent(): void {
    if (this.phase === 'sent') return;
    this.phase = 'sent';
    if (!this.settled) this.start();
  }

  /** After the call returned: the clock starts, unless the store queued it or has sent it already. */
  called(): void {
    if (this.phase === 'called' && !this.settled) this.start();
  }

  /** Whether the call is settled now (false: the timeout, or the call, settled it before). */
  settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.stop();
    return true;
  }

  private start(): void {
    this.stop();
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      if (this.settled) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.immediate = setImmediate(() => this.expire());
      }, this.timeoutMs);
    });
  }

  private expire(): void {
    this.immediate = undefined;
    if (this.settle()) this.reject(new RateLimitStoreTimeoutError(this.timeoutMs));
  }

  private stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
  }
}
