/** Jest runs the TypeScript sources as native ES modules (Nest 12 is ESM only). */
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // the README's examples import the package by name: the source here
    '^nest-rate-limit$': '<rootDir>/lib/index.ts',
    '^nest-rate-limit/testing$': '<rootDir>/lib/testing/index.ts',
    '^nest-rate-limit/(graphql|websockets|microservices)$': '<rootDir>/lib/$1/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  testTimeout: 30000,
};

/**
 * One project per need, because Jest runs a project's global setup only when the run has a test of it: a run
 * of test/unit starts, installs and checks nothing; test/docs gets chromium; the rest redis-server and a
 * PostgreSQL (test/provision/).
 */
export default {
  testTimeout: 30000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.spec.ts', '<rootDir>/packages/simulator/test/**/*.spec.ts'],
    },
    {
      ...common,
      displayName: 'docs',
      testMatch: ['<rootDir>/test/docs/**/*.spec.ts'],
      globalSetup: '<rootDir>/test/provision/jest-chromium.mjs',
    },
    {
      ...common,
      displayName: 'servers',
      testMatch: ['<rootDir>/test/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/unit/', '<rootDir>/test/docs/'],
      globalSetup: '<rootDir>/test/provision/jest-servers.mjs',
      globalTeardown: '<rootDir>/test/provision/jest-servers-teardown.mjs',
    },
  ],
};
