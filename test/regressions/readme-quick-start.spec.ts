import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** The first ```ts block under a heading of the README. */
function codeUnder(heading: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n## ${heading}\n`));
  const start = section.indexOf('```ts\n') + '```ts\n'.length;
  return section.slice(start, section.indexOf('\n```', start));
}

// Regression: the Quick start did not compile as one file (TS2449: Class 'AuthController' used before its
// declaration, in @Module's metadata above it).
it("the README's Quick start compiles as written, as one strict file", () => {
  const dir = join(ROOT, '.tmp', 'quick-start');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'app.module.ts'), codeUnder('Quick start'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../../tsconfig.json',
      compilerOptions: { noEmit: true, rootDir: '../..', paths: { 'nest-rate-limit': ['../../lib/index.ts'] } },
      include: ['app.module.ts'],
    }),
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  expect(() => execFileSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8', stdio: 'pipe' })).not.toThrow();
}, 120_000);
