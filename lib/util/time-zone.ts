const formatters = new Map<string, Intl.DateTimeFormat>();

/** A formatter of wall-clock fields in `timeZone`, one per zone. */
export function timeZoneFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Checks an IANA time zone name; returns a message when it is not one. */
export function checkTimeZone(timeZone: unknown): string | undefined {
  if (typeof timeZone !== 'string' || timeZone === '')
    return `must be an IANA time zone name, got ${JSON.stringify(timeZone)}`;
  try {
    timeZoneFormatter(timeZone);
    return undefined;
  } catch {
    return `must be an IANA time zone name such as 'UTC' or 'Europe/Paris', got ${JSON.stringify(timeZone)}`;
  }
}
