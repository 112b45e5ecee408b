import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'packages/*/dist/',
      '.tmp/',
      'coverage/',
      'node_modules/',
      'bench/node_modules/',
      'bench/results/',
      'docs/.vitepress/cache/',
      'docs/.vitepress/dist/',
      'docs/api/',
      'docs/bench/',
      // Compiled (strict) by each consumer app of test/consumers/consumer-apps.ts, on the packed package.
      'test/consumers/app/',
      'test/consumers/nest11-cjs/e2e/',
      'test/consumers/nest12-esm/e2e/',
      'test/consumers/nest12-vitest/e2e/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Type-aware: a promise nobody awaits or handles, or one passed where nothing waits for it, is a request
    // that may hang or an error that disappears.
    files: ['lib/**/*.ts', 'packages/*/src/**/*.ts', 'sample-app/**/*.ts', 'test/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'process',
          'console',
          'global',
          'globalThis',
          'performance',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'URL',
          'Buffer',
          'fetch',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
