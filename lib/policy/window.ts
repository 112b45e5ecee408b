const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+)(ms|s|m|h|d)$/;

/**
 * Parses a window given as milliseconds or as a duration string into whole milliseconds.
 * Returns undefined when the value is not a valid window (the caller names the policy in its error).
 * @example parseWindow('10s') === 10_000
 */
export function parseWindow(window: unknown): number | undefined {
  let ms: number;
  if (typeof window === 'number') {
    ms = window;
  } else if (typeof window === 'string') {
    const [, amount, unit] = DURATION.exec(window.trim()) ?? [];
    const unitMs = unit === undefined ? undefined : UNIT_MS[unit];
    if (unitMs === undefined) return undefined;
    ms = Number(amount) * unitMs;
  } else {
    return undefined;
  }
  return Number.isSafeInteger(ms) && ms >= 1 ? ms : undefined;
}
