import type { Clock } from '../util/clock.js';

/** Where a FakeClock starts unless told: 2030-01-01T00:00:00Z, a multiple of every window up to a day. */
export const FAKE_CLOCK_START = Date.UTC(2030, 0, 1);

/**
 * A clock a test moves by hand: the module's time stands still until advance() or set() (and only the
 * module's: timers and Date are not faked). Injectable from RateLimitTestingModule.
 * @example app.get(FakeClock).advance(60_000); // the next window
 */
export class FakeClock implements Clock {
  private nowMs: number;

  constructor(startMs: number = FAKE_CLOCK_START) {
    this.nowMs = FakeClock.checked(startMs, 'startMs');
  }

  now(): number {
    return this.nowMs;
  }

  /** Moves the clock `ms` forward (or back, with a negative `ms`). */
  advance(ms: number): this {
    this.nowMs = FakeClock.checked(this.nowMs + FakeClock.checked(ms, 'ms'), 'the time');
    return this;
  }

  /** Sets the clock to `ms` since the epoch. */
  set(ms: number): this {
    this.nowMs = FakeClock.checked(ms, 'ms');
    return this;
  }

  private static checked(ms: number, what: string): number {
    if (!Number.isSafeInteger(ms))
      throw new TypeError(`nest-rate-limit: FakeClock: ${what} must be whole milliseconds, got ${ms}`);
    return ms;
  }
}
