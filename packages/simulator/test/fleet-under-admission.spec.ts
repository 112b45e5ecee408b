import { mostShort, runFleet, type FleetWindow } from '../src/fleet/index.js';

// The fleet simulation's under-admission with leases: how far a fleet falls short of the limit (the slow tier:
// runs of 100,000 requests and more). Shares past the limit: fleet-shares.spec.ts; the bound: fleet-bounds.spec.ts.

/**
 * A run of 100,000 requests or more: each request goes through a real DecisionEngine, some seconds on a loaded
 * machine.
 */
const LONG_RUN_MS = 300_000;

describe('fleet simulation: under-admission', () => {
  // 20 instances of 525 requests a second, 5% over a fixed window of 10,000 a second.
  const near = { instances: 20, ratePerSecond: 10_500, limit: 10_000, lease: 50, durationMs: 3000 };

  it.each([0, 200, 1000])(
    'within instances × lease per window with at most one take in flight (%i µs)',
    async (rttUs) => {
      const r = await runFleet({ ...near, rttUs, growth: 'growing' });
      expect(mostShort(r)).toBeLessThanOrEqual(near.instances * near.lease);
    },
  );

  // Regression: every request that found no units while a take was in flight sent a take of its own, each for
  // up to `lease`, so an instance held about (requests per round trip) × lease and the fleet fell short far
  // beyond instances × lease (7,125 short of a window against a bound of 1,000 here). Now a key has one take on
  // its way per instance and its other requests wait for it: a window in the steady state falls short by no more
  // than one lease an instance. (The first window also has the takes' growth, and a window's last requests that
  // wait for a take are admitted in the next one.)
  it(
    'within instances × lease with many requests in flight in each instance (regression: concurrent takes)',
    async () => {
      const stacked = { instances: 20, ratePerSecond: 200_000, limit: 199_000, lease: 50, durationMs: 3000 };
      const r = await runFleet({ ...stacked, rttUs: 5000, growth: 'growing' });
      const middle = r.windows[1] as FleetWindow;
      expect(Math.min(middle.offered, stacked.limit) - middle.admitted).toBeLessThanOrEqual(
        stacked.instances * stacked.lease,
      );
      // and about one store call per lease of requests
      expect(r.storeCalls / r.offered).toBeLessThan(0.05);
    },
    LONG_RUN_MS,
  );
});
