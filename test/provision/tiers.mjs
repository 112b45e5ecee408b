// The tiers of the suite, by name: `npm run test:tier -- <name>` runs one (test/provision/run-tier.mjs). Each
// spec file is in exactly one folder tier (test/unit/tiers.spec.ts checks it); SLOW is what `npm test` leaves
// out (jest.config.js gives it a project of its own, `slow`), which CI runs in a step of its own
// (`npm run test:slow`). Paths are relative to the repository, a folder ending in `/`.

/**
 * Out of `npm test`, each for minutes of its own, and run one file at a time (run-tier.mjs): the consumer apps
 * install Nest 10–12 from the npm registry and compile them; the soak is 2 minutes of load by design; the
 * overload regressions flood an app on a 100 ms store timeout, which another file's work beside them can
 * exceed; the fleet simulations push hundreds of thousands of requests through real engines (their output and
 * flags stay in the fast tier: fleet-simulator.spec.ts).
 */
export const SLOW = [
  'test/consumers/',
  'test/fault/soak.spec.ts',
  'test/regressions/overload.spec.ts',
  'test/regressions/overload-postgres.spec.ts',
  'packages/simulator/test/fleet-bounds.spec.ts',
  'packages/simulator/test/fleet-store-calls.spec.ts',
  'packages/simulator/test/fleet-under-admission.spec.ts',
  'packages/simulator/test/fleet-shares.spec.ts',
];

/** Each tier: the folders (or files) it runs, and what it needs. `slow`: its files are all in SLOW. */
export const TIERS = {
  unit: { paths: ['test/unit/', 'packages/simulator/test/'], needs: 'nothing' },
  docs: { paths: ['test/docs/'], needs: 'chromium; the docs site, built once a run' },
  redis: { paths: ['test/redis/', 'test/cluster/'], needs: 'redis-server' },
  conformance: { paths: ['test/conformance/'], needs: 'redis-server, PostgreSQL' },
  postgres: { paths: ['test/postgres/'], needs: 'PostgreSQL' },
  e2e: { paths: ['test/e2e/'], needs: 'redis-server, PostgreSQL' },
  contexts: {
    paths: ['test/graphql/', 'test/websockets/', 'test/microservices/', 'test/outcome/'],
    needs: 'redis-server, PostgreSQL',
  },
  fault: { paths: ['test/fault/'], needs: 'redis-server (a sentinel too)' },
  regressions: { paths: ['test/regressions/'], needs: 'redis-server, PostgreSQL' },
  fuzz: { paths: ['test/fuzz/'], needs: 'redis-server, PostgreSQL' },
  package: { paths: ['test/testing/', 'test/sample-app/', 'test/migration/'], needs: 'redis-server' },
  cli: { paths: ['test/cli/'], needs: 'redis-server, PostgreSQL' },
  consumers: { paths: ['test/consumers/'], needs: 'the npm registry', slow: true },
  slow: { paths: SLOW, needs: 'redis-server, PostgreSQL, the npm registry', slow: true },
};

/** The Jest project of the slow files (jest.config.js). */
export const SLOW_PROJECT = 'slow';
