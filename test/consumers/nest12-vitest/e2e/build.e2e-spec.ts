import { expect, it } from 'vitest';

// Vitest leaves node_modules to Node: the package and its `testing` entry load as the ES module build.
it('loads the ES module build, nest-rate-limit/testing included', () => {
  expect(import.meta.resolve('nest-rate-limit')).toMatch(/nest-rate-limit\/dist\/index\.js$/);
  expect(import.meta.resolve('nest-rate-limit/testing')).toMatch(/nest-rate-limit\/dist\/testing\/index\.js$/);
});
