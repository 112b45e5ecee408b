import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { freePort } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const ROOT = join(import.meta.dirname, '..', '..');
const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The `n`th ```<lang> block under a heading of a Markdown file (the README, or a page of the docs site). */
function codeUnder(heading: string, file = 'README.md', lang = 'ts', n = 0): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const at = text.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`${file} has no "## ${heading}" section`);
  const next = text.indexOf('\n## ', at + 1);
  const section = text.slice(at, next < 0 ? undefined : next);
  const blocks = [...section.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)\\n```', 'g'))];
  const block = blocks[n]?.[1];
  if (block === undefined) throw new Error(`${file}, "## ${heading}": no ${lang} block #${n + 1}`);
  return block;
}

/** Compiles one sample as a strict file of the package (`nest-rate-limit` is lib/); `emit` writes its .js. */
function compile(dir: string, code: string, emit: boolean): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'main.ts'), code);
  // Emitted, it runs from inside the package, so `nest-rate-limit` resolves to dist/ by the package's own name.
  const emitted = { noEmit: false, declaration: false, sourceMap: false, outDir: 'out', paths: {} };
  const noEmit = { noEmit: true, rootDir: '../..', paths: { 'nest-rate-limit': ['../../lib/index.ts'] } };
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../../tsconfig.json',
      compilerOptions: emit ? { rootDir: '.', ...emitted } : noEmit,
      include: ['main.ts'],
    }),
  );
  try {
    execFileSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    throw new Error(String((error as { stdout?: string }).stdout ?? error), { cause: error });
  }
}

// The docs site's getting-started page shows the same Quick start: what is compiled and run below is both.
it("the docs site's Quick start is the README's", () => {
  expect(codeUnder('Quick start', 'docs/getting-started.md')).toBe(codeUnder('Quick start'));
  expect(codeUnder('Quick start', 'docs/getting-started.md', 'http')).toBe(
    codeUnder('Quick start', 'README.md', 'http'),
  );
});

// Regression: the Quick start did not compile as one file (TS2449: Class 'AuthController' used before its
// declaration, in @Module's metadata above it).
it("the README's Quick start and the site's login example compile as written, as strict files", () => {
  expect(() => compile(join(ROOT, '.tmp', 'quick-start'), codeUnder('Quick start'), false)).not.toThrow();
  const login = codeUnder('A login', 'docs/getting-started.md');
  expect(() => compile(join(ROOT, '.tmp', 'login-example'), login, false)).not.toThrow();
}, 120_000);

/** A response as the README shows it, with every number a placeholder: the seconds left vary with the clock. */
function shape(status: string, headers: Record<string, string>, body: string): string {
  const lines = [status, ...Object.entries(headers).map(([name, value]) => `${name.toLowerCase()}: ${value}`)];
  return `${lines.join('\n')}\n\n${body}`.replace(/\d+/g, 'N');
}

// Regression (issue 19, item 4; issue 32): pasted as it was, the Quick start stopped the start (`redis.url` unset);
// and the 429 the README shows is the one the fourth request gets, headers and body.
it("the README's Quick start runs as pasted, with its main.ts, and answers the 429 it shows", async () => {
  const dir = join(ROOT, '.tmp', 'quick-start-run');
  compile(dir, codeUnder('Quick start'), true);
  const port = await freePort();
  const child = spawn(process.execPath, [join(dir, 'out', 'main.js')], {
    env: { ...process.env, PORT: String(port), NO_COLOR: '1' },
    stdio: 'ignore',
  });
  try {
    const url = `http://127.0.0.1:${port}/hello`;
    // Up once it answers at all: `/` has no route, so asking it counts nothing against the limit.
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => true,
          () => false,
        ),
      'the Quick start app answering',
      20_000,
    );
    // The fixed window starts on the minute: four requests that straddle one would all be admitted. Wall-clock
    // time is the app's own clock here (a separate process), so the test starts clear of the next minute.
    const intoMinuteMs = Date.now() % 60_000;
    if (intoMinuteMs > 55_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinuteMs + 100));
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await fetch(url);
      statuses.push(last.status);
    }
    if (last === undefined) throw new Error('no request was sent');
    expect(statuses).toEqual([200, 200, 200, 429]);

    const shown = codeUnder('Quick start', 'README.md', 'http');
    const [head = '', body = ''] = shown.split('\n\n');
    const [status = '', ...fields] = head.split('\n');
    const names = fields.map((field) => field.slice(0, field.indexOf(':')));
    const got = Object.fromEntries(names.map((name) => [name, last.headers.get(name) ?? '(none)']));
    const shownHeaders = Object.fromEntries(
      fields.map((field) => [field.slice(0, field.indexOf(':')), field.slice(field.indexOf(':') + 2)]),
    );
    expect(shape(`HTTP/1.1 ${last.status} ${last.statusText}`, got, await last.text())).toBe(
      shape(status, shownHeaders, body),
    );
  } finally {
    child.kill();
  }
}, 120_000);

// Regression (issue 19, item 4): the login example stopped the start when pasted (`redis.url` unset).
it("the site's login example runs as pasted, on the in-memory store", async () => {
  const dir = join(ROOT, '.tmp', 'login-example-run');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `app.module.${process.pid}.ts`);
  writeFileSync(file, codeUnder('A login', 'docs/getting-started.md'));
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
