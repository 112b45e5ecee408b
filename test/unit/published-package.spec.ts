import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = join(ROOT, 'dist');

/** What the published types may import: the required peers and Node's own modules (an app has @types/node). */
const ALLOWED = /^(?:\.{1,2}\/|node:|@nestjs\/common$|@nestjs\/core$|rxjs$)/;

function declarations(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

interface Conditions {
  readonly 'module-sync': { readonly types: string; readonly default: string };
  readonly import: { readonly types: string; readonly default: string };
  readonly require: { readonly types: string; readonly default: string };
}
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, Conditions | string>;
  typesVersions: Record<string, Record<string, string[]>>;
};
/** Each entry point of `exports` (`.`, `./testing`, `./graphql`...) with its conditions. */
const ENTRY_POINTS = Object.entries(PACKAGE.exports).filter(
  (entry): entry is [string, Conditions] => typeof entry[1] === 'object',
);

/**
 * The names entry point `name` exports to `import`, loaded by `node` from the package's root, and the optional
 * packages (the contexts', graphql, ioredis, pg) that the built package resolved meanwhile (load-recorder.mjs).
 */
function imported(name: string): { names: string[]; loaded: string[] } {
  const script = `import(${JSON.stringify(name)}).then((m) => console.log(JSON.stringify(Object.keys(m).sort())))`;
  const recorder = fileURLToPath(new URL('../support/load-recorder.mjs', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', recorder, '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (run.status !== 0) throw new Error(`node failed: ${run.stderr}`);
  const loaded = run.stderr.split('\n').filter((line) => line.startsWith('loaded:'));
  return { names: JSON.parse(run.stdout) as string[], loaded };
}

/** The names a CommonJS file of dist/ exports, as TypeScript writes its re-exports. */
function commonJsNames(file: string): string[] {
  const source = readFileSync(join(ROOT, file), 'utf8');
  return [...source.matchAll(/Object\.defineProperty\(exports, "(\w+)"/g)]
    .map((match) => match[1] ?? '')
    .filter((name) => name !== '__esModule')
    .sort();
}

describe('the published package (dist/, built by npm run build)', () => {
  it('has types that name no optional peer (ioredis, pg, @opentelemetry/api, the context packages)', () => {
    const files = declarations(DIST);
    const offending = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:from |import\(|<reference types=)["']([^"']+)["']/g)]
        .map((match) => match[1] ?? '')
        .filter((specifier) => !ALLOWED.test(specifier))
        .map((specifier) => `${relative(DIST, file)}: ${specifier}`),
    );
    expect(files.length).toBeGreaterThan(50);
    expect(files.some((file) => file.startsWith(join(DIST, 'cjs')))).toBe(true);
    expect(offending).toEqual([]);
  });

  it('gives require() and import() one and the same module under Node (the module-sync condition)', () => {
    const script =
      'const a = require("nest-rate-limit"); import("nest-rate-limit").then((b) => ' +
      'console.log(a.RateLimitModule === b.RateLimitModule && a.RateLimitService === b.RateLimitService))';
    const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
    expect(run.stdout.trim()).toBe('true');
  });

  it('exports the same names from its CommonJS build as from its ES module build', () => {
    const { names } = imported('nest-rate-limit');
    expect(names).toContain('RateLimitModule');
    // Without require(esm), require() takes the CommonJS build (as Jest's CommonJS runtime does). It cannot
    // load Nest 12, which is ESM only, so only the names are compared here: test/consumers runs it on Nest 10/11.
    expect(commonJsNames('dist/cjs/index.js')).toEqual(names);
  });

  it('has the entry points nest-rate-limit, /testing, /graphql, /websockets and /microservices', () => {
    expect(ENTRY_POINTS.map(([subpath]) => subpath)).toEqual([
      '.',
      './testing',
      './graphql',
      './websockets',
      './microservices',
    ]);
  });

  // The context packages are optional peers: an entry point that loaded one would fail in an app without it.
  it.each(
    ENTRY_POINTS.map(([subpath, conditions]) => ({ name: `nest-rate-limit${subpath.slice(1)}`, subpath, conditions })),
  )(
    '$name resolves, loads no optional package, has the same names in both builds and types for every resolution',
    ({ name, subpath, conditions }) => {
      const { names, loaded } = imported(name);
      expect(loaded).toEqual([]);
      expect(commonJsNames(conditions.require.default)).toEqual(names);
      for (const file of [conditions.import.types, conditions.require.types, conditions['module-sync'].types])
        expect(readFileSync(join(ROOT, file), 'utf8')).toMatch(/^export /m);
      expect(conditions['module-sync']).toEqual(conditions.import);
      // `module: commonjs` (moduleResolution node10) reads no `exports`: typesVersions points it to the types.
      if (subpath !== '.') expect(PACKAGE.typesVersions['*']?.[subpath.slice(2)]).toEqual([conditions.require.types]);
    },
  );
});
