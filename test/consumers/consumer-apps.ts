import type { ChildProcess } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

import { installConsumer, INSTALL_MS, packedForThisFile, run, startApp } from './consumer-kit.js';

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
export const CONSUMERS = [
  { name: 'nest10-cjs', nest: '10', commonjs: true, runner: undefined, realImport: false },
  { name: 'nest11-cjs', nest: '11', commonjs: true, runner: 'jest', realImport: true },
  { name: 'nest12-esm', nest: '12', commonjs: false, runner: 'jest', realImport: true },
  { name: 'nest12-vitest', nest: '12', commonjs: false, runner: 'vitest', realImport: true },
] as const;

/** The tests of the consumer app `name` of CONSUMERS (each a spec file of its own: consumers-<name>.spec.ts). */
export function describeConsumerApp(name: (typeof CONSUMERS)[number]['name']): void {
  const consumer = CONSUMERS.find((c) => c.name === name);
  if (consumer === undefined) throw new Error(`no consumer app ${name} in CONSUMERS`);
  const { nest, commonjs, runner, realImport } = consumer;
  const packed = packedForThisFile();
  describe(`a ${name} app on the packed package`, () => {
    let dir: string;

    beforeAll(async () => {
      const sources: [string, string][] = [[join('app', 'src'), 'src']];
      if (runner === 'jest') sources.push([join('app', 'e2e'), 'e2e']);
      dir = await installConsumer(packed(), name, sources);
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
        const started = await startApp(dir, [], flags as string[]);
        app = started.app;
        base = `http://127.0.0.1:${started.ports[0]}`;
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
}
