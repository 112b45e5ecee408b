// Jest's ESM mode resolves the package's `import` condition: the ES module build.
it('loads the ES module build', () => {
  expect(import.meta.resolve('nest-rate-limit')).toMatch(/nest-rate-limit\/dist\/index\.js$/);
});
