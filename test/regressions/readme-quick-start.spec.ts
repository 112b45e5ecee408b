import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** The first ```ts block under a heading of a Markdown file (the README, or a page of the docs site). */
function codeUnder(heading: string, file = 'README.md'): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const at = text.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`${file} has no "## ${heading}" section`);
  const section = text.slice(at);
  const start = section.indexOf('```ts\n') + '```ts\n'.length;
  return section.slice(start, section.indexOf('\n```', start));
}

// The docs site's getting-started page shows the same Quick start: what is compiled and run below is both.
it("the docs site's Quick start is the README's", () => {
  expect(codeUnder('Quick start', 'docs/getting-started.md')).toBe(codeUnder('Quick start'));
});

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

// Regression (issue 19, item 4): pasted as it was, the Quick start stopped the start (`redis.url` unset).
it("the README's Quick start runs as pasted, on the in-memory store", async () => {
  const dir = join(ROOT, '.tmp', 'quick-start-run');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `app.module.${process.pid}.ts`);
  writeFileSync(file, codeUnder('Quick start'));
  const { AppModule } = (await import(file)) as { AppModule: new () => unknown };
  const { NestFactory } = await import('@nestjs/core');
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  try {
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const health = await fetch(`${url}/auth/health`);
    expect([health.status, await health.text()]).toEqual([200, 'ok']);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      const res = await fetch(`${url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: `user-${i}` }),
      });
      statuses.push(res.status);
    }
    // 20 logins per IP per 15 minutes: the 21st is denied
    expect(statuses).toEqual([...Array(20).fill(201), 429]);
  } finally {
    await app.close();
  }
});
