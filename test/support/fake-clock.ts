import type { Clock } from '../../lib/clock.js';

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  constructor(public nowMs = 1_700_000_000_000) {}

  now(): number {
    return this.nowMs;
  }

  advance(ms: number): this {
    this.nowMs += ms;
    return this;
  }

  set(ms: number): this {
    this.nowMs = ms;
    return this;
  }
}
