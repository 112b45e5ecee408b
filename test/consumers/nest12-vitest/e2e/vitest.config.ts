// The e2e configuration of Nest's docs for Vitest (docs.nestjs.com/recipes/swc#vitest): SWC compiles the tests,
// emitting the decorator metadata Nest injects by (unplugin-swc takes experimentalDecorators and
// emitDecoratorMetadata from tsconfig.json).
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.e2e-spec.ts'],
    root: './',
  },
  plugins: [
    // Explicitly ES modules, not a module type inherited from an .swcrc.
    swc.vite({ module: { type: 'es6' } }),
  ],
});
