import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import type { Configuration, Stats } from 'webpack';

/**
 * webpack's Node API, taken with Node's require: Jest's ESM interop would read each of its exports, and
 * reading the deprecated ones prints their deprecation warnings.
 */
const webpack = createRequire(import.meta.url)('webpack') as typeof import('webpack');
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HERE = fileURLToPath(new URL('.', import.meta.url));
const INSTALLED = join(ROOT, 'node_modules');

/**
 * Nest's own lazy imports of its optional packages, which a bundle of a Nest app without them must leave out
 * whatever nest-rate-limit does: @nestjs/common's ValidationPipe and ClassSerializerInterceptor import
 * class-validator and class-transformer, @nestjs/core's NestApplication and NestFactory the microservice and
 * WebSocket modules. The Nest CLI's webpack defaults and Nest's serverless FAQ ignore these with an IgnorePlugin
 * too, for any importer; here only for imports from @nestjs/common and @nestjs/core, so that nest-rate-limit's
 * own loads (of @nestjs/microservices among others) get no help.
 */
const NEST_LAZY_IMPORTS = new Set([
  'class-validator',
  'class-transformer',
  '@nestjs/microservices',
  '@nestjs/microservices/microservices-module.js',
  '@nestjs/websockets/socket-module.js',
]);
const NEST_ITSELF = /[\\/]node_modules[\\/]@nestjs[\\/](?:common|core)(?:[\\/]|$)/;

/**
 * An HTTP-only Nest app (test/consumers/webpack/main.cjs) with the package as npm installs it (the packed
 * tarball) and none of its optional peers, bundled by webpack 5 with `target: 'node'` and no externals, must
 * build with nothing in its configuration about nest-rate-limit, and its bundle run alone. Through each build:
 * - the ES module build, which webpack 5.107 and later take for `require()` too (the `module-sync` condition);
 * - the CommonJS build, which earlier webpack versions take for `require()` (their conditions, set here).
 */
const BUILDS = [
  { build: 'ES module', entry: 'dist/index.js', other: 'dist/cjs/index.js', conditionNames: undefined },
  {
    build: 'CommonJS',
    entry: 'dist/cjs/index.js',
    other: 'dist/index.js',
    conditionNames: ['require', 'module', 'webpack', 'production', 'node'],
  },
] as const;

let work: string;
let app: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'nest-rate-limit-webpack-'));
  app = join(work, 'app');
  const pkg = join(app, 'node_modules', 'nest-rate-limit');
  await mkdir(pkg, { recursive: true });
  // dist/ is built by `npm run build` before this test: packing must not build it again.
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
  });
  const tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]?.filename ?? 'missing');
  await run('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1']);
  for (const file of ['package.json', 'main.cjs']) await copyFile(join(HERE, 'webpack', file), join(app, file));
  await install(app);
}, 60_000);

afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

it("installs none of nest-rate-limit's optional peers into the app", () => {
  const { peerDependenciesMeta = {} } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  const optional = Object.keys(peerDependenciesMeta).filter((name) => peerDependenciesMeta[name]?.optional);
  expect(optional).toEqual(expect.arrayContaining(['ioredis', 'pg', '@opentelemetry/api', '@nestjs/graphql']));
  expect(optional.filter((name) => existsSync(join(app, 'node_modules', name)))).toEqual([]);
});

describe.each(BUILDS)(
  'a Nest app bundled by webpack with no externals, on the $build build',
  ({ build, entry, other, conditionNames }) => {
    let stats: Stats;
    let out: string;

    beforeAll(async () => {
      out = join(work, `bundle-${build === 'CommonJS' ? 'cjs' : 'esm'}`);
      stats = await bundle({
        context: app,
        entry: './main.cjs',
        target: 'node',
        // Production's tree shaking and module concatenation; without Terser, which would only slow the test.
        mode: 'production',
        optimization: { minimize: false },
        externals: [],
        output: { path: out, filename: 'main.js' },
        resolve: {
          // The app's node_modules links to the packages of this repository's, where every optional peer is
          // installed: followed to their real paths, they would resolve those peers from there.
          symlinks: false,
          ...(conditionNames === undefined
            ? {}
            : { byDependency: { commonjs: { conditionNames: [...conditionNames] } } }),
        },
        plugins: [
          new webpack.IgnorePlugin({
            checkResource: (resource, context) => NEST_LAZY_IMPORTS.has(resource) && NEST_ITSELF.test(context),
          }),
        ],
      });
    }, 120_000);

    it(`builds from the ${build} build, with no error and no warning about nest-rate-limit's files`, () => {
      const files = stats.compilation.fileDependencies;
      const pkg = join(app, 'node_modules', 'nest-rate-limit');
      expect([files.has(join(pkg, entry)), files.has(join(pkg, other))]).toEqual([true, false]);
      const { errors = [], warnings = [] } = stats.toJson({ all: false, errors: true, warnings: true });
      const line = ({ moduleName, message }: { moduleName?: string; message: string }) =>
        `${moduleName ?? '?'}: ${message.split('\n')[0]}`;
      expect(errors.map(line)).toEqual([]);
      expect(warnings.filter((w) => w.moduleName?.includes('/nest-rate-limit/')).map(line)).toEqual([]);
    });

    describe('the bundle, run by node without any node_modules', () => {
      let server: ChildProcess;
      let base: string;

      beforeAll(async () => {
        ({ server, base } = await startBundle(join(out, 'main.js')));
      }, 30_000);
      afterAll(() => server?.kill());

      it('limits the route and sends the rate-limit headers', async () => {
        const answers = [];
        for (let i = 0; i < 3; i++) answers.push(await fetch(`${base}/hello`));
        expect(answers.map((r) => r.status)).toEqual([200, 200, 429]);
        expect(answers.map((r) => r.headers.get('ratelimit-policy'))).toEqual(Array(3).fill('"hello";q=2;w=60'));
      });
    });
  },
);

/** Runs webpack on `config`; rejects only when webpack itself fails (the compilation's errors are in the stats). */
async function bundle(config: Configuration): Promise<Stats> {
  const compiler = webpack(config);
  try {
    return await new Promise<Stats>((resolve, reject) =>
      compiler.run((error, stats) => (error || stats === undefined ? reject(error) : resolve(stats))),
    );
  } finally {
    await promisify(compiler.close.bind(compiler))();
  }
}

/**
 * Links into the node_modules of the app at `dir` what npm would install there: the dependencies of its
 * package.json, their dependencies, optional dependencies and peers that are not optional, and so on, from this
 * repository's node_modules, whose layout is npm's (what is not nested in a package's own node_modules, and so
 * comes with the link of that package, is at the top). Optional peers are left out, as npm leaves them out:
 * nest-rate-limit's are missing, as in an app that does not use them.
 */
async function install(dir: string): Promise<void> {
  const seen = new Set<string>();
  const visit = async (at: string): Promise<void> => {
    if (seen.has(at)) return;
    seen.add(at);
    const pkg = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    const optional = new Set(Object.keys(pkg.optionalDependencies ?? {}));
    const peers = Object.keys(pkg.peerDependencies ?? {}).filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional);
    for (const name of new Set([...Object.keys(pkg.dependencies ?? {}), ...optional, ...peers])) {
      let found = locate(at, dir, name);
      if (found === undefined && existsSync(join(INSTALLED, name))) {
        found = join(dir, 'node_modules', name);
        await mkdir(dirname(found), { recursive: true });
        await symlink(join(INSTALLED, name), found);
      }
      if (found !== undefined) await visit(found);
      else if (!optional.has(name)) throw new Error(`${name}, needed by ${at}, is not in ${INSTALLED}`);
    }
  };
  await visit(dir);
}

/** Where Node finds the package `name` from the directory `from`, looking no higher than the app at `dir`. */
function locate(from: string, dir: string, name: string): string | undefined {
  for (let at = from; at.startsWith(dir); at = dirname(at)) {
    if (existsSync(join(at, 'node_modules', name))) return join(at, 'node_modules', name);
    if (at === dir) return undefined;
  }
  return undefined;
}

/** Starts the bundle on a free loopback port, from its own directory; resolves once it listens. */
function startBundle(main: string): Promise<{ server: ChildProcess; base: string }> {
  const server = spawn(process.execPath, [main], { cwd: dirname(main), stdio: 'pipe' });
  let output = '';
  return new Promise((resolve, reject) => {
    const failed = (why: string) => reject(new Error(`${why}; the bundle printed:\n${output}`));
    server.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const port = /listening on (\d+)/.exec(output)?.[1];
      if (port !== undefined) resolve({ server, base: `http://127.0.0.1:${port}` });
    });
    server.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.once('error', (error) => failed(error.message));
    server.once('exit', (code) => failed(`the bundle exited with ${code}`));
  });
}
