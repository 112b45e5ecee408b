import { parseWindow } from '../../../../lib/policy/window.js';
import {
  type DrawnAlgorithm,
  isPattern,
  patternTraffic,
  runRequest,
  type SimulationRequest,
} from '../../../../packages/simulator/src/request.js';
import type { SimulationResult } from '../../../../packages/simulator/src/run.js';
import {
  arrivalsTraffic,
  MAX_ARRIVALS,
  parseArrivals,
  type PatternName,
  SimulatorError,
} from '../../../../packages/simulator/src/traffic.js';

// What the playground computes for one configuration, kept out of the Vue component so that the parity test
// (test/docs/playground-parity.spec.ts) runs exactly this against `npm run simulate`.

/** The traffic choices of the form: the simulator's named patterns, or timestamps typed into the page. */
export type TrafficChoice = PatternName | 'timestamps';

/** One configuration of the playground, its fields as typed (an empty field means the command line's default). */
export interface Configuration {
  readonly algorithm: DrawnAlgorithm;
  readonly limit: string;
  /** Milliseconds or a duration like '1m', as `--window`. */
  readonly window: string;
  /** Token-bucket and GCRA only; empty for the limit. */
  readonly burst: string;
  readonly traffic: TrafficChoice;
  /** Requests per window of a named pattern; empty for the pattern's default. */
  readonly rate: string;
  /** Like the window; empty for the pattern's default (2 to 4 windows). */
  readonly duration: string;
  /** For `timestamps`: a JSON array of times in ms, or of `{ "atMs", "cost" }`; the brackets may be left out. */
  readonly timestamps: string;
}

/** What a configuration draws, or the first mistake in its fields. */
export type Outcome =
  | { readonly ok: true; readonly svg: string; readonly results: readonly SimulationResult[] }
  | { readonly ok: false; readonly error: string };

/**
 * The most requests the playground simulates. It runs on every keystroke, in the page's own thread: a few hundred
 * thousand arrivals take a moment there, the command line's two million would freeze the tab for many seconds.
 */
export const PLAYGROUND_MAX_ARRIVALS = 100_000;

/** The name the timestamps typed into the page go by in the chart and in errors. */
export const TIMESTAMPS_SOURCE = 'your timestamps';

/** The label of each field in the form, for errors that the library words with the command line's flags. */
const LABELS: Record<string, string> = {
  '--algorithm': 'Algorithm',
  '--limit': 'Limit',
  '--window': 'Window',
  '--burst': 'Burst',
  '--traffic': 'Traffic',
  '--rate': 'Rate',
  '--duration': 'Duration',
};

/** A mistake in one field of the form. */
class FieldError extends Error {}

const usesBurst = (algorithm: DrawnAlgorithm): boolean => algorithm === 'token-bucket' || algorithm === 'gcra';

function integer(label: string, text: string): number | undefined {
  const value = text.trim();
  if (value === '') return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new FieldError(`${label} must be an integer >= 1, got ${JSON.stringify(text)}`);
  }
  return n;
}

function duration(label: string, text: string): number | string {
  const value = text.trim();
  const window = /^\d+$/.test(value) ? Number(value) : value;
  if (parseWindow(window) === undefined) {
    throw new FieldError(
      `${label} must be a whole number of ms >= 1 or a duration like '500ms', '10s', '1m', '1h', '1d', got ${JSON.stringify(text)}`,
    );
  }
  return window;
}

/** The timestamps typed into the page as JSON (an array, its brackets optional). */
function timestampsJson(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed.startsWith('[') ? trimmed : `[${trimmed}]`);
  } catch (error) {
    throw new SimulatorError(TIMESTAMPS_SOURCE, `is not a JSON array: ${(error as Error).message}`);
  }
}

/** The request `npm run simulate` would be given for a configuration (the file of timestamps aside). */
export function requestOf(c: Configuration): SimulationRequest {
  const durationMs = c.duration.trim() === '' ? undefined : parseWindow(duration('Duration', c.duration));
  return {
    algorithm: c.algorithm,
    limit: integer('Limit', c.limit) ?? 100,
    window: c.window.trim() === '' ? '1m' : duration('Window', c.window),
    burst: usesBurst(c.algorithm) ? integer('Burst', c.burst) : undefined,
    traffic: c.traffic === 'timestamps' ? TIMESTAMPS_SOURCE : c.traffic,
    ratePerWindow: c.traffic === 'timestamps' ? undefined : integer('Rate', c.rate),
    durationMs,
  };
}

/**
 * Runs a configuration with the simulator's own code (runRequest, the patterns, parseArrivals) and draws it
 * with its own SVG chart: the numbers and the picture of `npm run simulate` for the same inputs.
 * @example runConfiguration({ ...DEFAULT_CONFIGURATIONS[0], algorithm: 'gcra' })
 */
export function runConfiguration(c: Configuration): Outcome {
  try {
    const request = requestOf(c);
    const { svg, results } = runRequest(request, (windowMs, limit) => {
      const traffic = isPattern(request.traffic)
        ? patternTraffic(request, windowMs, limit)
        : arrivalsTraffic(
            TIMESTAMPS_SOURCE,
            parseArrivals(timestampsJson(c.timestamps), TIMESTAMPS_SOURCE),
            windowMs,
            request.durationMs,
          );
      if (traffic.arrivals.length > PLAYGROUND_MAX_ARRIVALS) {
        throw new FieldError(
          `Traffic: ${traffic.name} lays out ${traffic.arrivals.length} requests; the playground draws at most ` +
            `${PLAYGROUND_MAX_ARRIVALS} (lower the rate, the limit or the duration; the command line draws up to ${MAX_ARRIVALS})`,
        );
      }
      return traffic;
    });
    return { ok: true, svg, results };
  } catch (error) {
    if (error instanceof FieldError) return { ok: false, error: error.message };
    if (error instanceof SimulatorError) {
      const label = LABELS[error.where];
      return {
        ok: false,
        error: label === undefined ? error.message : `${label}${error.message.slice(error.where.length)}`,
      };
    }
    throw error;
  }
}

/**
 * The arguments of `npm run simulate` that give the same numbers; `file` stands for the timestamps
 * saved as a JSON file. Fields left empty are left out, as the command line's defaults are the playground's.
 * @example cliArguments(DEFAULT_CONFIGURATIONS[1]).join(' ')
 */
export function cliArguments(c: Configuration, file = 'timestamps.json'): string[] {
  const args = ['--algorithm', c.algorithm];
  const flag = (name: string, value: string) => (value.trim() === '' ? [] : [`--${name}`, value.trim()]);
  args.push(...flag('limit', c.limit), ...flag('window', c.window));
  if (usesBurst(c.algorithm)) args.push(...flag('burst', c.burst));
  args.push('--traffic', c.traffic === 'timestamps' ? file : c.traffic);
  if (c.traffic !== 'timestamps') args.push(...flag('rate', c.rate));
  args.push(...flag('duration', c.duration));
  return args;
}

/** What the page opens with: the fixed window and GCRA on the boundary attack, the difference between them. */
const BOUNDARY_ATTACK = {
  limit: '100',
  window: '1m',
  burst: '',
  traffic: 'boundary-burst',
  rate: '',
  duration: '',
  timestamps: '0, 100, 200, 59000, 59500, 60000, 60500, {"atMs": 61000, "cost": 5}',
} as const;
export const DEFAULT_CONFIGURATIONS: readonly [Configuration, Configuration] = [
  { ...BOUNDARY_ATTACK, algorithm: 'fixed-window' },
  { ...BOUNDARY_ATTACK, algorithm: 'gcra' },
];
