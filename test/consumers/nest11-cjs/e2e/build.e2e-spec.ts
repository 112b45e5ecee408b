// Jest's CommonJS runtime cannot require() an ES module: it loads the package's CommonJS build.
it('loads the CommonJS build', () => {
  expect(require.resolve('nest-rate-limit')).toMatch(/nest-rate-limit\/dist\/cjs\/index\.js$/);
});
