import type { QuotaPeriod } from '../../policy/policy.types.js';
import { timeZoneFormatter as formatter } from '../../util/time-zone.js';

export type { QuotaPeriod };

/** The wall-clock date and time in `timeZone` at the instant `ms`. */
function wallClock(
  ms: number,
  timeZone: string,
): { y: number; m: number; d: number; h: number; min: number; s: number } {
  const parts: Record<string, number> = {};
  for (const { type, value } of formatter(timeZone).formatToParts(ms)) parts[type] = Number(value);
  return {
    y: part(parts, 'year', timeZone),
    m: part(parts, 'month', timeZone),
    d: part(parts, 'day', timeZone),
    h: part(parts, 'hour', timeZone),
    min: part(parts, 'minute', timeZone),
    s: part(parts, 'second', timeZone),
  };
}

/** One part of a formatted date: the formatter asks for each of them, so a missing one is a bug. */
function part(parts: Record<string, number>, type: string, timeZone: string): number {
  const value = parts[type];
  if (value === undefined) throw new Error(`nest-rate-limit: the date formatted in ${timeZone} has no ${type}`);
  return value;
}

/** Milliseconds the zone is ahead of UTC at the instant `ms` (whole seconds). */
function offsetAt(ms: number, timeZone: string): number {
  const w = wallClock(ms, timeZone);
  return Date.UTC(w.y, w.m - 1, w.d, w.h, w.min, w.s) - (ms - (((ms % 1000) + 1000) % 1000));
}

/**
 * The first instant whose wall clock in `timeZone` reads `y-m-d 00:00` or later: local midnight, or, on the
 * rare day a zone skips midnight (a daylight-saving change at 00:00), the first instant of that day.
 */
function startOfLocalDay(y: number, m: number, d: number, timeZone: string): number {
  const wall = Date.UTC(y, m - 1, d);
  let instant = wall - offsetAt(wall, timeZone);
  instant = wall - offsetAt(instant, timeZone);
  const seen = wallClock(instant, timeZone);
  if (Date.UTC(seen.y, seen.m - 1, seen.d) < wall) {
    // midnight does not exist that day: the day starts where the clock jumps
    instant += Date.UTC(y, m - 1, d) - Date.UTC(seen.y, seen.m - 1, seen.d, seen.h, seen.min, seen.s);
  }
  return instant;
}

/**
 * The calendar period that holds the instant `nowMs`: `[startMs, endMs)` in epoch milliseconds, its days and
 * months as the clocks of `timeZone` show them.
 * @example quotaPeriodAt('month', 'Europe/Paris', Date.UTC(2026, 0, 31, 23, 30)) // February in Paris
 */
export function quotaPeriodAt(
  period: QuotaPeriod,
  timeZone: string,
  nowMs: number,
): { startMs: number; endMs: number } {
  const { y, m, d } = wallClock(nowMs, timeZone);
  if (period === 'day') {
    const next = new Date(Date.UTC(y, m - 1, d + 1));
    return {
      startMs: startOfLocalDay(y, m, d, timeZone),
      endMs: startOfLocalDay(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), timeZone),
    };
  }
  const next = new Date(Date.UTC(y, m, 1));
  return {
    startMs: startOfLocalDay(y, m, 1, timeZone),
    endMs: startOfLocalDay(next.getUTCFullYear(), next.getUTCMonth() + 1, 1, timeZone),
  };
}
