import { runFleet } from '../src/fleet/index.js';

// The fleet simulation's shares of a leased key past its limit, between instances (the slow tier: runs of
// 120,000 requests). Under-admission: fleet-under-admission.spec.ts; the bound: fleet-bounds.spec.ts.

/**
 * A run of 100,000 requests or more: each request goes through a real DecisionEngine, some seconds on a loaded
 * machine.
 */
const LONG_RUN_MS = 300_000;

describe('fleet simulation: shares of a leased key past its limit', () => {
  // With a round trip of exactly 1 ms, an instance whose takes reach the store just after the bucket's refill
  // (once per ms of the store's clock) keeps reaching it then, and instances split into those admitting all they
  // are offered and those admitting none (docs/fleet-simulation.md). Round trips that vary break that rhythm.
  const overloaded = { instances: 20, ratePerSecond: 40_000, limit: 20_000, lease: 50, durationMs: 3000 };

  it.each(['sliding-window-counter', 'token-bucket', 'gcra'] as const)(
    '%s: with round trips varying by ± 100 µs each way, every instance gets at least 0.7 of its share',
    async (algorithm) => {
      const r = await runFleet({ ...overloaded, algorithm, rttJitterUs: 200 });
      expect(r.admitted).toBeLessThan(r.offered * 0.7); // past the limit (a bucket: its burst, then its rate)
      for (const second of r.seconds) expect(second.share.min * overloaded.instances).toBeGreaterThanOrEqual(0.7);
    },
    LONG_RUN_MS,
  );
});
