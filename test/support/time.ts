/**
 * Where a test's clock starts unless it needs a boundary: 2023-11-14T22:13:20Z, 20 s into a minute, so a test
 * that does not ask for a window's start is not at one. (The shipped FakeClock's own default,
 * FAKE_CLOCK_START, is a multiple of every window up to a day: the tests keep theirs, and their numbers.)
 */
export const TEST_START_MS = 1_700_000_000_000;
