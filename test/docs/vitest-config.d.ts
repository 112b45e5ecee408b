// vitest and unplugin-swc are no dev dependencies (Jest runs this package's tests): the Vitest configuration of
// docs/testing.md is checked against the members it uses. test/consumers/nest12-vitest runs that very file
// (test/unit/testing-page.spec.ts holds the page to it) with the real packages.
declare module 'vitest/config' {
  export interface UserConfig {
    test?: { include?: string[]; root?: string; globals?: boolean };
    plugins?: unknown[];
  }
  export function defineConfig(config: UserConfig): UserConfig;
}

declare module 'unplugin-swc' {
  const swc: { vite(options?: { module?: { type?: 'es6' | 'commonjs' } }): unknown };
  export default swc;
}
