/**
 * Where a test's clock starts unless it needs a boundary: 2023-11-14T22:13:20Z, 20 s into a minute, so a test
 * that does not ask for a window's start is not at one. (The shipped FakeClock's own default,
 * FAKE_CLOCK_START, is a multiple of every window up to a day: the tests keep theirs, and their numbers.)
 */
export const TEST_START_MS = 1_700_000_000_000;

/**
 * The start of the clock-aligned window of `windowMs` that holds `nearMs` (as a fixed window counts it), for
 * a test that must begin on a boundary; the boundary after it is `alignedStart(windowMs, nearMs) + windowMs`.
 * @example new FakeClock(alignedStart(60_000)); // 1_699_999_980_000, the minute that holds TEST_START_MS
 */
export function alignedStart(windowMs: number, nearMs = TEST_START_MS): number {
  return Math.floor(nearMs / windowMs) * windowMs;
}
