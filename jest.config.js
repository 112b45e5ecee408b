/** Jest runs the TypeScript sources as native ES modules (Nest 12 is ESM only). */
export default {
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
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  testTimeout: 30000,
};
