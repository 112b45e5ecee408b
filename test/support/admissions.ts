import { nth } from './harness.js';

/**
 * The most admissions that fall in one half-open window `[t, t + windowMs)`, over every t: what a limit of that
 * window bounds, however the admissions were spread (tests count them, never time them).
 * @example mostInAnyWindow([0, 10, 1000, 1005], 1000) // 3: 10, 1000 and 1005 fall in [10, 1010)
 */
export function mostInAnyWindow(admittedAtMs: readonly number[], windowMs: number): number {
  const sorted = [...admittedAtMs].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    const from = nth(sorted, i);
    while (j < sorted.length && nth(sorted, j) < from + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
