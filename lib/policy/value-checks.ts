import { emissionUs, gcraRatePerWindow, MAX_GCRA_SHORTFALL } from './emission.js';

/**
 * Checks of single values that apply both at start (a policy's static fields) and per request (what a limit,
 * burst or cost function returned), with the way a bad value is shown in their messages.
 */

/** The most units of 1/windowMs a policy may count: 2^51, a quarter of the exact integers of a double. */
export const MAX_UNITS = 2 ** 51;

/** A numeric string: a value read from configuration (an environment variable) that was never converted. */
const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i;

/** A value as an error message shows it; a numeric string gets the hint that it was never converted. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return NUMERIC.test(value) ? `${JSON.stringify(value)} (a string: use Number(...))` : JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  return String(value);
}

/** Why `units` (a limit or burst) per window of `windowMs` cannot be counted exactly, or undefined. NaN passes. */
export function checkUnits(units: number, windowMs: number): string | undefined {
  if (!(units * windowMs > MAX_UNITS)) return undefined;
  return `limit (or burst) × window in ms must not exceed 2^51; got ${units} × ${windowMs}`;
}

/**
 * Why GCRA cannot hold `limit` per `windowMs`, or undefined: it counts in whole µs, and an emission interval
 * rounded up by more than MAX_GCRA_SHORTFALL of it would enforce a lower limit than the one declared.
 */
export function checkGcraRate(limit: number, windowMs: number): string | undefined {
  const admitted = gcraRatePerWindow(limit, windowMs);
  if (!(admitted < limit * (1 - MAX_GCRA_SHORTFALL))) return undefined;
  const exact = (1000 * windowMs) / limit;
  const lost = ((1 - admitted / limit) * 100).toFixed(1);
  return (
    `gcra counts time in whole microseconds: ${limit} per ${windowMs} ms is one request every ` +
    `${+exact.toPrecision(6)} µs, rounded up to ${emissionUs(limit, windowMs)} µs, which admits only ` +
    `${+admitted.toPrecision(6)} per window (${lost}% below the limit). Use token-bucket, which is exact at any ` +
    `rate, or a limit that divides ${1000 * windowMs}`
  );
}

/**
 * A limit or burst returned for one request, checked like a static one (an integer >= 1 within the bounds; a
 * GCRA limit that its µs clock can hold).
 */
export function checkRequestLimit(
  value: unknown,
  windowMs: number,
  fail: (problem: string) => never,
  gcraLimit = false,
): number {
  const limit = checkQuotaLimit(value, fail);
  const problem = checkUnits(limit, windowMs) ?? (gcraLimit ? checkGcraRate(limit, windowMs) : undefined);
  return problem === undefined ? limit : fail(problem);
}

/** A quota's limit for one request, checked like a static one. */
export function checkQuotaLimit(value: unknown, fail: (problem: string) => never): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    return fail(`limit must be an integer >= 1, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Reports a cost that is not a non-negative safe integer through `fail`.
 * Costs are whole units (requests, tokens, rows) so that every algorithm stays exact.
 */
export function checkCost(cost: unknown, fail: (problem: string) => never): number {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
    return fail(`cost must be a non-negative integer, got ${describeValue(cost)}`);
  }
  return cost;
}
