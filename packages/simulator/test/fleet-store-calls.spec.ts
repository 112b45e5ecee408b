import { FLEET_ALGORITHMS, runFleet } from '../src/fleet/index.js';
import { SCENARIOS } from '../../../test/support/fleet-checks.js';

// The fleet simulation's store calls per request on a hot key, with and without leases (in the slow tier: each
// run pushes its requests through real engines). The bound: fleet-bounds.spec.ts.

describe('fleet simulation: store calls per request on a hot key', () => {
  // 20 instances offering 90% of the limit: every request is admitted, and each a store call without leases.
  const calm = { instances: 20, ratePerSecond: 18_000, limit: 20_000, lease: 50, durationMs: 3000 };

  it.each(FLEET_ALGORITHMS)('%s: one call per request without leases; leases admit as much', async (a) => {
    const off = await runFleet({ ...calm, algorithm: a, growth: 'off' });
    expect(off.storeCalls).toBe(off.offered);
    const growing = await runFleet({ ...calm, algorithm: a, growth: 'growing' });
    expect(growing.admitted).toBeGreaterThan(0.97 * off.admitted);
  });

  it.each(['fixed-window', 'sliding-window-counter'] as const)(
    '%s: fewer than 2 / lease with growing takes',
    async (a) => {
      const growing = await runFleet({ ...calm, algorithm: a, growth: 'growing' });
      expect(growing.storeCalls / growing.offered).toBeLessThan(2 / calm.lease);
    },
  );

  // By design: a bucket below its rate stays near full, and units taken ahead from a full bucket could add to a
  // later full burst (leaseLifetimeMs gives them no lifetime), so growing takes stay at one unit there
  // (docs/hot-keys.md says so).
  it.each(['token-bucket', 'gcra'] as const)(
    '%s with growing takes below the rate: takes never grow, about one store call per two requests or more',
    async (algorithm) => {
      const growing = await runFleet({ ...calm, algorithm, growth: 'growing' });
      expect(growing.storeCalls / growing.offered).toBeGreaterThan(0.4);
    },
  );

  it('a fixed window at twice the limit with the cache of denials: about 1 / lease of the admitted requests', async () => {
    const hot = SCENARIOS['twice the limit, Poisson, 1 ms round trip'];
    const r = await runFleet({ ...hot, growth: 'growing' });
    expect(r.storeCalls / r.admitted).toBeLessThan(2 / 50);
    const off = await runFleet({ ...hot, growth: 'off' });
    expect(off.storeCalls).toBeGreaterThanOrEqual(off.admitted);
  });
});
