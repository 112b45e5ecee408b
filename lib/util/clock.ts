/**
 * A source of the current time in whole milliseconds since the Unix epoch.
 * Inject your own (a fake clock in tests) wherever the module takes a `clock`.
 * @example const clock: Clock = { now: () => 1_700_000_000_000 };
 */
export interface Clock {
  now(): number;
}

/**
 * The wall clock: the one place the module reads the time of day.
 * @example new MemoryRateLimitStore({ clock: systemClock });
 */
export const systemClock: Clock = { now: () => Date.now() };
