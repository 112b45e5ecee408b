/** One request of a simulation: when it arrives (ms after the simulation starts) and the units it costs. */
export interface Arrival {
  readonly atMs: number;
  readonly cost: number;
}

/** The named traffic patterns; any other `--traffic` is a JSON file of arrivals. */
export const PATTERNS = ['steady', 'bursts', 'boundary-burst', 'ramp'] as const;
export type PatternName = (typeof PATTERNS)[number];

/** A traffic pattern laid out in time: its arrivals in order, and how long the simulation lasts (ms). */
export interface Traffic {
  readonly name: string;
  /** One line for the chart's title, such as `100 just before the window edge at 1m and 100 just after`. */
  readonly description: string;
  readonly arrivals: readonly Arrival[];
  readonly durationMs: number;
}

/** Thrown for a traffic pattern or file that cannot be simulated; `where` names the flag or file. */
export class SimulatorError extends Error {
  constructor(
    readonly where: string,
    problem: string,
  ) {
    super(`${where}: ${problem}`);
    this.name = 'SimulatorError';
  }
}

/** What a pattern is shaped by: the policy's limit and window, and optionally a rate and a duration. */
export interface PatternOptions {
  readonly limit: number;
  readonly windowMs: number;
  /** Requests per window (the peak rate for `ramp`, the size of the attack for `boundary-burst`). */
  readonly ratePerWindow?: number;
  readonly durationMs?: number;
}

/** The most requests a pattern lays out: a run takes about a second per million. */
export const MAX_ARRIVALS = 2_000_000;

/** The rate of each pattern when none is given, as a multiple of the limit. */
const DEFAULT_RATE: Record<PatternName, number> = { steady: 0.5, bursts: 1.5, 'boundary-burst': 1, ramp: 2 };
/** The duration of each pattern when none is given, in windows. */
const DEFAULT_WINDOWS: Record<PatternName, number> = { steady: 3, bursts: 3, 'boundary-burst': 2, ramp: 4 };

/** Formats milliseconds the way windows are written: `1d`, `1m`, `30s`, `250ms`. */
export function formatMs(ms: number): string {
  if (ms >= 86_400_000 && ms % 86_400_000 === 0) return `${ms / 86_400_000}d`;
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/**
 * Lays out a named pattern, deterministically. Times are ms after a start that is a window edge, so the fixed
 * window's edges fall at whole multiples of `windowMs`.
 * - `steady`: one request every `windowMs / rate` (default rate: half the limit).
 * - `bursts`: every half window, a burst of `rate / 2` requests within a tenth of a window (at most 1 s),
 *   the first a quarter window in (default rate: 1.5 × limit, so bursts exceed the average the limit allows).
 * - `boundary-burst`: the fixed window's attack, `rate` requests (default: the limit) in the last second
 *   before the window edge at `windowMs` and as many in the first second after it.
 * - `ramp`: a rate rising linearly from 0 to `rate` per window (default: 2 × limit) over the duration.
 * @example buildPattern('boundary-burst', { limit: 100, windowMs: 60_000 }).arrivals.length === 200
 */
export function buildPattern(name: PatternName, options: PatternOptions): Traffic {
  const { limit, windowMs: w } = options;
  const rate = options.ratePerWindow ?? Math.max(1, Math.round(limit * DEFAULT_RATE[name]));
  const durationMs = options.durationMs ?? DEFAULT_WINDOWS[name] * w;
  const windows = durationMs / w;
  const expected = {
    steady: rate * windows,
    bursts: rate * windows,
    'boundary-burst': 2 * rate,
    ramp: (rate * windows) / 2,
  };
  if (expected[name] > MAX_ARRIVALS) {
    throw new SimulatorError(
      '--traffic',
      `${name} at ${rate} per ${formatMs(w)} for ${formatMs(durationMs)} is about ${Math.round(expected[name])} requests; ` +
        `at most ${MAX_ARRIVALS} are simulated (lower --rate, --limit or --duration)`,
    );
  }
  const times: number[] = [];
  let description: string;
  if (name === 'steady') {
    for (let i = 0; Math.floor((i * w) / rate) < durationMs; i++) times.push(Math.floor((i * w) / rate));
    description = `steady, ${rate} per ${formatMs(w)}`;
  } else if (name === 'bursts') {
    const size = Math.ceil(rate / 2);
    const span = Math.max(1, Math.min(1000, Math.floor(w / 10)));
    for (let start = Math.floor(w / 4); start < durationMs; start += w / 2) {
      for (let i = 0; i < size; i++) times.push(Math.floor(start + (i * span) / size));
    }
    description = `bursts of ${size} within ${formatMs(span)}, every ${formatMs(Math.floor(w / 2))}`;
  } else if (name === 'boundary-burst') {
    const span = Math.max(1, Math.min(1000, Math.floor(w / 4)));
    for (let i = 0; i < rate; i++) times.push(w - span + Math.floor((i * span) / rate));
    for (let i = 0; i < rate; i++) times.push(w + Math.floor((i * span) / rate));
    description = `${rate} in the ${formatMs(span)} before the window edge at ${formatMs(w)}, ${rate} in the ${formatMs(span)} after`;
  } else {
    // Rate r(t) = rate·t/duration per window: the k-th request arrives when ∫r = k, at sqrt(2·duration·w·k/rate).
    for (let k = 1; ; k++) {
      const at = Math.floor(Math.sqrt((2 * durationMs * w * k) / rate));
      if (at >= durationMs) break;
      times.push(at);
    }
    description = `ramp from 0 to ${rate} per ${formatMs(w)} over ${formatMs(durationMs)}`;
  }
  const arrivals = times.filter((t) => t < durationMs).map((atMs) => ({ atMs, cost: 1 }));
  return { name, description, arrivals, durationMs };
}

const describe = (value: unknown): string => (value === undefined ? 'nothing' : JSON.stringify(value));

/**
 * Reads arrivals from parsed JSON: an array of times in ms after the start, or of `{ atMs, cost? }` (cost
 * default 1). Throws SimulatorError naming `source` and the element at fault. The result is in time order.
 * @example parseArrivals([0, 10, { atMs: 20, cost: 5 }], 'arrivals.json')
 */
export function parseArrivals(json: unknown, source: string): Arrival[] {
  if (!Array.isArray(json)) {
    throw new SimulatorError(
      source,
      `expected a JSON array of arrival times in ms or of { atMs, cost }, got ${describe(json)}`,
    );
  }
  const arrivals = json.map((entry: unknown, index): Arrival => {
    const at = `${source}, element ${index}`;
    const fields: { atMs?: unknown; cost?: unknown } =
      typeof entry === 'object' && entry !== null ? (entry as { atMs?: unknown; cost?: unknown }) : { atMs: entry };
    const { atMs, cost = 1 } = fields;
    if (typeof atMs !== 'number' || !Number.isSafeInteger(atMs) || atMs < 0) {
      throw new SimulatorError(at, `atMs must be a whole number of ms >= 0 after the start, got ${describe(atMs)}`);
    }
    if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
      throw new SimulatorError(at, `cost must be an integer >= 0, got ${describe(cost)}`);
    }
    return { atMs, cost };
  });
  return arrivals.sort((a, b) => a.atMs - b.atMs);
}

/**
 * Traffic from a list of arrivals, lasting `durationMs` (default: up to the window edge after the last
 * arrival); arrivals at or after the end are left out.
 */
export function arrivalsTraffic(
  name: string,
  arrivals: readonly Arrival[],
  windowMs: number,
  durationMs?: number,
): Traffic {
  const last = arrivals.at(-1)?.atMs ?? 0;
  const end = durationMs ?? Math.max(1, Math.ceil((last + 1) / windowMs)) * windowMs;
  const kept = arrivals.filter((a) => a.atMs < end);
  return { name, description: `${kept.length} arrivals from ${name}`, arrivals: kept, durationMs: end };
}
