import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = fileURLToPath(new URL('.', import.meta.url));
const INSTALL_MS = 300_000;

/**
 * Apps a team has today, each installing the packed tarball (its own lock file for the rest) with none of the
 * optional peers (ioredis, pg, @opentelemetry/api, the GraphQL, WebSocket and microservice packages):
 * - Nest 10, CommonJS, `module: commonjs` (TypeScript reads the package's top-level `types`);
 * - Nest 11, CommonJS, `module: nodenext` (the `require` condition's types);
 * - Nest 12, ES modules, strict TypeScript without `skipLibCheck` (the `import` condition's types); plus its
 *   Jest e2e test in Jest's ESM mode, on the ES module build;
 * - Nest 12, ES modules, its e2e tests run by Vitest (the runner Nest 12's CLI sets up), compiled by SWC as in
 *   Nest's docs: the Testing example of docs/testing.md, on `nest-rate-limit/testing`, type-checked as the app is.
 * Node 20.19+ loads the ES module build for require() and import() alike (the `module-sync` condition); the
 * CommonJS build is what loaders without require(esm) take: Jest's CommonJS runtime (the Nest 11 app's e2e
 * test, as `nest new` sets it up), and Node with `--no-experimental-require-module`.
 */
const CONSUMERS = [
  { name: 'nest10-cjs', nest: '10', commonjs: true, runner: undefined, realImport: false },
  { name: 'nest11-cjs', nest: '11', commonjs: true, runner: 'jest', realImport: true },
  { name: 'nest12-esm', nest: '12', commonjs: false, runner: 'jest', realImport: true },
  { name: 'nest12-vitest', nest: '12', commonjs: false, runner: 'vitest', realImport: true },
] as const;

let work: string;
let tarball: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'nest-rate-limit-consumers-'));
  // dist/ is built by `npm test`; packing must not build it again while other suites run on it.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
  });
  tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]?.filename ?? 'missing');
}, 60_000);

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe.each(CONSUMERS)('a $name app on the packed package', ({ name, nest, commonjs, runner, realImport }) => {
  let dir: string;

  beforeAll(async () => {
    dir = join(work, name);
    await mkdir(dir);
    await cp(join(HERE, name), dir, { recursive: true });
    await cp(join(HERE, 'app', 'src'), join(dir, 'src'), { recursive: true });
    if (runner === 'jest') await cp(join(HERE, 'app', 'e2e'), join(dir, 'e2e'), { recursive: true });
    const npm = (...args: string[]) =>
      run('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, timeout: INSTALL_MS });
    await npm('ci');
    // Not --legacy-peer-deps: an install that conflicts with the app's Nest fails here (ERESOLVE).
    await npm('install', '--no-save', tarball);
  }, 2 * INSTALL_MS);

  it(`installs into Nest ${nest} without any optional peer`, async () => {
    const installed = await readdir(join(dir, 'node_modules'));
    const nestjs = await readdir(join(dir, 'node_modules', '@nestjs'));
    expect(installed).toContain('nest-rate-limit');
    expect(installed.filter((p) => ['ioredis', 'pg', '@opentelemetry', 'graphql'].includes(p))).toEqual([]);
    expect(nestjs.filter((p) => ['graphql', 'websockets', 'microservices'].includes(p))).toEqual([]);
    const { stdout } = await run(process.execPath, ['-p', 'require("@nestjs/core/package.json").version'], {
      cwd: dir,
    });
    expect(stdout.trim().split('.')[0]).toBe(nest);
  });

  it('type-checks and compiles against the packed .d.ts files', async () => {
    await expect(run('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: dir })).resolves.toBeDefined();
  }, 60_000);

  if (runner === 'jest') {
    it(`passes its Jest e2e test (Jest's ${commonjs ? 'CommonJS runtime, on the CommonJS' : 'ESM mode, on the ES module'} build)`, async () => {
      const { stderr } = await run('npm', ['run', '--silent', 'test:e2e'], { cwd: dir, timeout: 120_000 });
      expect(stderr).toMatch(/Tests:\s+2 passed, 2 total/);
    }, 150_000);
  }

  if (runner === 'vitest') {
    // Vitest compiles without type-checking: the e2e tests (the `testing` entry's types) are type-checked here.
    it('type-checks its e2e tests against the packed .d.ts files', async () => {
      await expect(run('npx', ['tsc', '-p', 'e2e/tsconfig.json'], { cwd: dir })).resolves.toBeDefined();
    }, 60_000);

    it('passes its Vitest e2e tests (the Testing example of docs/testing.md, on the ES module build)', async () => {
      const { stdout } = await run('npm', ['run', '--silent', 'test:e2e'], { cwd: dir, timeout: 120_000 });
      const summary = stripVTControlCharacters(stdout);
      expect(summary).toMatch(/Test Files\s+2 passed \(2\)/);
      expect(summary).toMatch(/Tests\s+4 passed \(4\)/);
    }, 150_000);
  }

  const runs = commonjs ? [[], ['--no-experimental-require-module']] : [[]];
  describe.each(runs.map((flags) => [flags.join(' ') || 'node', flags]))('run by %s', (_label, flags) => {
    let app: ChildProcess;
    let base: string;

    beforeAll(async () => {
      ({ app, base } = await startApp(dir, flags as string[]));
    }, 30_000);
    afterAll(() => app?.kill());

    it('limits a route and sends the rate-limit headers', async () => {
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await fetch(`${base}/hello`));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 429]);
      const [first, second, denied] = answers.map((r) => Object.fromEntries(r.headers));
      expect(first?.['ratelimit-policy']).toBe('"hello";q=2;w=60');
      expect([first?.ratelimit, second?.ratelimit]).toEqual(['"hello";r=1;t=30', '"hello";r=0;t=60']);
      expect(denied).toMatchObject({ 'retry-after': '30', ratelimit: '"hello";r=0;t=30' });
    });

    // Regression: on Nest 11, Express answered the problem details as application/json.
    it('answers a denial with problem details, as application/problem+json', async () => {
      const denied = await fetch(`${base}/hello`);
      expect(denied.status).toBe(429);
      expect(denied.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(await denied.json()).toMatchObject({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        status: 429,
        'violated-policies': ['hello'],
      });
    });

    it('answers through an injected RateLimitService', async () => {
      const first = await (await fetch(`${base}/exports/600`)).json();
      const second = await (await fetch(`${base}/exports/600`)).json();
      expect([first, second]).toEqual([
        { allowed: true, remaining: 400 },
        { allowed: false, remaining: 400 },
      ]);
    });

    it('loads the graphql, websockets and microservices subpaths without their optional peers', async () => {
      expect(await (await fetch(`${base}/subpaths`)).json()).toEqual({
        errors: ['RateLimitGraphQLError', 'RateLimitDroppedEvent'],
        denial: { status: 'error', code: 'RATE_LIMITED', message: 'denied', policy: 'hello', retryAfter: 1 },
      });
    });

    // Where the app's `import()` stays one (`module: commonjs` compiles it to require), in a CommonJS app.
    if (commonjs && realImport && flags.length === 0) {
      it('holds one copy of the module for require() and import()', async () => {
        expect(await (await fetch(`${base}/copies`)).json()).toEqual({ copies: 1 });
      });
    }
  });
});

/** Starts the consumer's compiled app on a free loopback port; resolves once it listens. */
function startApp(dir: string, flags: string[]): Promise<{ app: ChildProcess; base: string }> {
  const app = spawn(process.execPath, [...flags, join('dist', 'main.js')], { cwd: dir, stdio: 'pipe' });
  let output = '';
  return new Promise((resolve, reject) => {
    const failed = (why: string) => reject(new Error(`${why}; the app printed:\n${output}`));
    app.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const port = /listening on (\d+)/.exec(output)?.[1];
      if (port !== undefined) resolve({ app, base: `http://127.0.0.1:${port}` });
    });
    app.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.once('exit', (code) => failed(`the app exited with ${code}`));
  });
}
