import { elementAt } from '../../../lib/util/element-at.js';
import { RateLimitPolicyError } from '../../../lib/policy/policy.errors.js';
import {
  ALGORITHMS,
  type RateLimitAlgorithm,
  type RateLimitDuration,
  type ResolvedPolicy,
} from '../../../lib/policy/policy.types.js';
import { validatePolicy } from '../../../lib/policy/validate-policy.js';
import { simulate, type SimulationResult } from './run.js';
import { chartSvg, comparisonSvg } from './svg.js';
import { buildPattern, PATTERNS, type PatternName, SimulatorError, type Traffic } from './traffic.js';

// The simulator without file access: what the command line (through index.ts) and the docs site's playground,
// which runs in a browser, share, so that both draw the same numbers for the same inputs.

/** An algorithm the simulator draws (see SIMULATED_ALGORITHMS). */
export type DrawnAlgorithm = Exclude<RateLimitAlgorithm, 'concurrency' | 'quota'>;

/** Why the simulator draws no chart of an algorithm, for the command line's error. */
export const NOT_SIMULATED: Readonly<Record<Exclude<RateLimitAlgorithm, DrawnAlgorithm>, string>> = {
  concurrency: 'a concurrency limit counts requests in flight, and simulated arrivals have no duration',
  quota: 'a quota counts per calendar day or month, far longer than a chart of a few windows',
};

/**
 * The algorithms of ALGORITHMS the simulator draws: the five rate limits. Not the other two, whose charts
 * would mislead. A concurrency limit counts requests in flight, and the simulator's arrivals have no duration:
 * each would hold its lease until the lease expires, which draws a sliding window log under another name. A
 * quota counts per calendar day or month: a chart a few windows long shows its first `limit` requests admitted
 * and every later one denied.
 */
export const SIMULATED_ALGORITHMS: readonly DrawnAlgorithm[] = ALGORITHMS.filter(
  (algorithm): algorithm is DrawnAlgorithm => !(algorithm in NOT_SIMULATED),
);

/** One of SIMULATED_ALGORITHMS, or `all` for the side-by-side chart. */
export type SimulatedAlgorithm = DrawnAlgorithm | 'all';

/** What `npm run simulate` is asked for, its flags parsed. */
export interface SimulationRequest {
  readonly algorithm: SimulatedAlgorithm;
  readonly limit: number;
  /** Milliseconds or a duration like '1m', as in policies. */
  readonly window: number | string;
  /** Token-bucket and GCRA only (ignored by the window algorithms in `all`). */
  readonly burst?: number;
  /** A pattern name, or the path of a JSON file of arrivals. */
  readonly traffic: string;
  /** Requests per window for a named pattern (see buildPattern). */
  readonly ratePerWindow?: number;
  readonly durationMs?: number;
}

/** The traffic of a run, laid out for the window and limit of the request's (first) policy. */
export type TrafficSource = (windowMs: number, limit: number) => Traffic;

/** The policy of one algorithm, checked by validatePolicy; its errors name the flag (`--limit`, `--burst`). */
export function policyFor(algorithm: DrawnAlgorithm, request: SimulationRequest): ResolvedPolicy {
  const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
  // In `all`, the window algorithms leave a burst aside; asked for alone, they refuse it (validatePolicy says why).
  const burst = bucket || request.algorithm !== 'all' ? request.burst : undefined;
  try {
    // A window from the command line is a string of any shape until validatePolicy has checked it.
    return validatePolicy({ algorithm, limit: request.limit, window: request.window as RateLimitDuration, burst });
  } catch (error) {
    if (!(error instanceof RateLimitPolicyError)) throw error;
    const problem = error.message.replace(/^Invalid rate-limit policy "[^"]*", field "[^"]*": /, '');
    throw new SimulatorError(`--${error.field ?? 'limit'}`, problem);
  }
}

/** The named pattern of a request (`request.traffic` is one of PATTERNS), shaped by its rate and duration. */
export function patternTraffic(request: SimulationRequest, windowMs: number, limit: number): Traffic {
  const options = { limit, windowMs, ratePerWindow: request.ratePerWindow, durationMs: request.durationMs };
  return buildPattern(request.traffic as PatternName, options);
}

/** Whether a request's traffic is a named pattern rather than a file of arrivals. */
export const isPattern = (traffic: string): traffic is PatternName => (PATTERNS as readonly string[]).includes(traffic);

/**
 * Runs a request on the traffic `trafficOf` lays out and draws it: one chart for one algorithm, a panel of each
 * of SIMULATED_ALGORITHMS for `all`.
 * @example runRequest(request, (windowMs, limit) => patternTraffic(request, windowMs, limit)).svg
 */
export function runRequest(
  request: SimulationRequest,
  trafficOf: TrafficSource,
): { svg: string; results: SimulationResult[] } {
  const algorithms = request.algorithm === 'all' ? SIMULATED_ALGORITHMS : [request.algorithm];
  const policies = algorithms.map((algorithm) => policyFor(algorithm, request));
  // One policy per algorithm, and at least one algorithm.
  const first = elementAt(policies, 0, 'the policies of a simulation');
  const traffic = trafficOf(first.windowMs, first.limit);
  const results = policies.map((policy) => simulate(policy, traffic));
  const svg =
    request.algorithm === 'all'
      ? comparisonSvg(results)
      : chartSvg(elementAt(results, 0, 'the results of a simulation'));
  return { svg, results };
}
