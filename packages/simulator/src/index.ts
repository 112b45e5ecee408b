import { readFileSync } from 'node:fs';

import type { SimulationResult } from './run.js';
import { isPattern, patternTraffic, runRequest, type SimulationRequest } from './request.js';
import { arrivalsTraffic, parseArrivals, PATTERNS, SimulatorError, type Traffic } from './traffic.js';

export { bucketWidth, busiestWindow, simulate, type Bucket, type SimulationResult } from './run.js';
export { chartSvg, comparisonSvg, type ChartData } from './svg.js';
export { buildPattern, parseArrivals, PATTERNS, SimulatorError, type Arrival, type Traffic } from './traffic.js';
export {
  NOT_SIMULATED,
  policyFor,
  SIMULATED_ALGORITHMS,
  type DrawnAlgorithm,
  type SimulatedAlgorithm,
  type SimulationRequest,
} from './request.js';

/** The traffic a request names: a pattern, or a JSON file of arrivals read from disk. */
export function trafficFor(request: SimulationRequest, windowMs: number, limit: number): Traffic {
  if (isPattern(request.traffic)) return patternTraffic(request, windowMs, limit);
  let text: string;
  try {
    text = readFileSync(request.traffic, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new SimulatorError(
      '--traffic',
      `must be ${PATTERNS.join(', ')} or the path of a JSON file of arrivals; cannot read ${JSON.stringify(request.traffic)} (${reason})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SimulatorError(`--traffic ${request.traffic}`, `is not JSON: ${(error as Error).message}`);
  }
  const arrivals = parseArrivals(json, `--traffic ${request.traffic}`);
  return arrivalsTraffic(request.traffic, arrivals, windowMs, request.durationMs);
}

/**
 * Runs a request and draws it: one chart for one algorithm, a panel of each of SIMULATED_ALGORITHMS for `all`.
 * The pure part, without the file of arrivals, is runRequest (request.ts), which the docs site's playground runs.
 * @example runSimulation({ algorithm: 'all', limit: 100, window: '1m', traffic: 'boundary-burst' }).svg
 */
export function runSimulation(request: SimulationRequest): { svg: string; results: SimulationResult[] } {
  return runRequest(request, (windowMs, limit) => trafficFor(request, windowMs, limit));
}
