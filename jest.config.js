import { availableParallelism } from 'node:os';

import { SLOW, SLOW_PROJECT } from './test/provision/tiers.mjs';

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

/** A path of test/provision/tiers.mjs (a folder ends in `/`) as a pattern of Jest's testMatch. */
const specsOf = (path) => (path.endsWith('/') ? `<rootDir>/${path}**/*.spec.ts` : `<rootDir>/${path}`);
/** The same path as a pattern of testPathIgnorePatterns (a regular expression). */
const ignored = (path) => `<rootDir>/${path.replace(/\./g, '\\.')}`;

/** What npm test needs (redis-server, PostgreSQL) for the tiers that start servers. */
const servers = {
  globalSetup: '<rootDir>/test/provision/jest-servers.mjs',
  globalTeardown: '<rootDir>/test/provision/jest-servers-teardown.mjs',
};

/**
 * One project per need, because Jest runs a project's global setup only when the run has a test of it: a run
 * of test/unit starts, installs and checks nothing; test/docs gets chromium, and test/docs/site/ the docs site
 * too, built once for the run; the rest redis-server and a PostgreSQL (test/provision/). The slow files (SLOW,
 * test/provision/tiers.mjs) are a project of their own, which `npm test` leaves out (`--ignoreProjects slow`)
 * and `npm run test:slow` runs.
 */
export default {
  testTimeout: 30000,
  // Jest's default, one worker fewer than the cores, is one on 2 cores: every file in sequence, while most of them
  // wait on servers, processes and sockets rather than compute. Two workers at least; more where there are cores.
  maxWorkers: Math.max(2, availableParallelism() - 1),
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.spec.ts', '<rootDir>/packages/simulator/test/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...SLOW.map(ignored)],
    },
    {
      ...common,
      displayName: 'docs',
      testMatch: ['<rootDir>/test/docs/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/docs/site/'],
      globalSetup: '<rootDir>/test/provision/jest-chromium.mjs',
    },
    {
      ...common,
      displayName: 'site',
      testMatch: ['<rootDir>/test/docs/site/**/*.spec.ts'],
      globalSetup: '<rootDir>/test/provision/jest-site.mjs',
      globalTeardown: '<rootDir>/test/provision/jest-site-teardown.mjs',
    },
    {
      ...common,
      displayName: 'servers',
      testMatch: ['<rootDir>/test/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/unit/', '<rootDir>/test/docs/', ...SLOW.map(ignored)],
      ...servers,
    },
    {
      ...common,
      displayName: SLOW_PROJECT,
      testMatch: SLOW.map(specsOf),
      ...servers,
    },
  ],
};
