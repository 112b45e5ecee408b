import { FLEET_ALGORITHMS, LEASE_MODES, runFleet } from '../src/fleet/index.js';
import { admissions, expectWithinTheAlgorithm, mostPerWindow, SCENARIOS } from '../../../test/support/fleet-checks.js';

// The fleet simulation's bound: whatever the traffic and the leases, the fleet never admits more than its
// algorithm allows (in the slow tier: each run pushes its requests through real engines). Store calls:
// fleet-store-calls.spec.ts; under-admission: fleet-under-admission.spec.ts; shares: fleet-shares.spec.ts;
// output and flags: fleet-simulator.spec.ts.

describe('fleet simulation: the fleet never admits more than the algorithm allows', () => {
  describe.each(Object.entries(SCENARIOS))('%s', (_name, scenario) => {
    it.each(FLEET_ALGORITHMS.flatMap((algorithm) => LEASE_MODES.map((growth) => [algorithm, growth] as const)))(
      '%s, lease %s',
      async (algorithm, growth) => {
        const r = await runFleet({ ...scenario, algorithm, growth }, { record: true });
        expect(r.admitted).toBeLessThan(r.offered); // the key was exhausted: the bound was tested
        expectWithinTheAlgorithm(r);
        // No instance ever spent a unit the store had not counted for it (the leases' own invariant).
        expect(r.overspent).toBe(0);
        expect(r.admitted).toBeLessThanOrEqual(r.granted);
      },
    );
  });

  it('token bucket and GCRA with a burst twice the limit: the burst plus the refill over any span', async () => {
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      for (const growth of LEASE_MODES) {
        const scenario = { instances: 10, ratePerSecond: 25_000, limit: 6000, burst: 12_000, durationMs: 1500 };
        const r = await runFleet({ ...scenario, algorithm, growth, lease: 100 }, { record: true });
        expectWithinTheAlgorithm(r);
        expect(r.bound.most).toBeGreaterThan(6000); // the burst was used: more than the limit's worth at once
      }
    }
  });

  it('with no lease a fixed window admits exactly the limit in each exhausted window: the check is tight', async () => {
    const r = await runFleet(
      { ...SCENARIOS['twice the limit, Poisson, 1 ms round trip'], growth: 'off' },
      { record: true },
    );
    expect(r.windows.map((w) => w.admitted)).toEqual([6000, 6000]);
    expect(mostPerWindow(admissions(r), 1000)).toBe(6000);
  });
});
