import type { FleetOptions, FleetResult } from '../../packages/simulator/src/fleet/index.js';
import { mostInAnyWindow } from './admissions.js';

// What the fleet simulations' specs (packages/simulator/test/fleet-*.spec.ts) share: their traffic scenarios and
// the checks of a recorded run against its algorithm, made from the admissions themselves.

/** The admissions of a run, recorded, for checks that do not trust its own BoundCheck. */
export function admissions(r: FleetResult): readonly number[] {
  if (r.admittedAtMs === undefined) throw new Error('the run was not recorded');
  return r.admittedAtMs;
}

/** Fixed window: the most units admitted in one window `[k·W, (k+1)·W)`. */
export function mostPerWindow(times: readonly number[], windowMs: number): number {
  const counts = new Map<number, number>();
  for (const t of times) counts.set(Math.floor(t / windowMs), (counts.get(Math.floor(t / windowMs)) ?? 0) + 1);
  return Math.max(0, ...counts.values());
}

/**
 * Sliding window counter: the largest of its estimate at an admission, this window's units so far plus the last
 * window's weighted by the part of it still in the trailing window, times the window (exact integers).
 */
function mostEstimateTimesWindow(times: readonly number[], windowMs: number): number {
  const counts = new Map<number, number>();
  let most = 0;
  for (const t of times) {
    const index = Math.floor(t / windowMs);
    const current = (counts.get(index) ?? 0) + 1;
    counts.set(index, current);
    const elapsed = t - index * windowMs;
    most = Math.max(most, current * windowMs + (counts.get(index - 1) ?? 0) * (windowMs - elapsed));
  }
  return most;
}

/** Checks every admission of a recorded run against what its algorithm allows, and the run's own check agrees. */
export function expectWithinTheAlgorithm(r: FleetResult): void {
  const times = admissions(r);
  const { algorithm, limit, windowMs, capacity } = r.policy;
  if (algorithm === 'fixed-window') {
    expect(mostPerWindow(times, windowMs)).toBeLessThanOrEqual(limit);
    expect(r.bound.most).toBe(mostPerWindow(times, windowMs));
  } else if (algorithm === 'sliding-window-counter') {
    expect(mostEstimateTimesWindow(times, windowMs)).toBeLessThanOrEqual(limit * windowMs);
    expect(mostPerWindow(times, windowMs)).toBeLessThanOrEqual(limit);
    expect(r.bound.most * windowMs).toBeCloseTo(mostEstimateTimesWindow(times, windowMs), 3);
  } else {
    // Over any span shorter than L ms: at most the burst plus what refills in L.
    for (const spanMs of [1, 10, 100, windowMs / 2, windowMs, 2 * windowMs]) {
      expect(mostInAnyWindow(times, spanMs)).toBeLessThanOrEqual(capacity + (limit * spanMs) / windowMs);
    }
    expect(r.bound.most).toBeLessThanOrEqual(capacity + 1e-6);
  }
  expect(r.bound.most).toBeLessThanOrEqual(r.bound.allowed + 1e-6);
}

/** Traffic scenarios, each exhausting the key; every algorithm × lease mode runs each. */
export const SCENARIOS: Record<string, Partial<FleetOptions>> = {
  'twice the limit, Poisson, 1 ms round trip': {
    ...{ instances: 20, ratePerSecond: 12_000, limit: 6000, lease: 50, durationMs: 2000 },
  },
  'evenly spaced, skewed shares, 5 ms round trip (many takes in flight), 200 ms windows': {
    ...{ instances: 20, ratePerSecond: 40_000, limit: 5000, windowMs: 200, lease: 50, durationMs: 1000 },
    ...{ rttUs: 5000, arrivals: 'even', skew: 1, seed: 7 },
  },
  // replies no longer come back in the order the calls went out
  'round trips that vary by ± 400 µs each way around 1 ms': {
    ...{ instances: 20, ratePerSecond: 12_000, limit: 6000, lease: 50, durationMs: 2000, rttJitterUs: 800 },
  },
  '250 µs round trip, lease 100, seed 3': {
    ...{ instances: 10, ratePerSecond: 20_000, limit: 6000, lease: 100, durationMs: 1500 },
    ...{ rttUs: 250, seed: 3 },
  },
};
