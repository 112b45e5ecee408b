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

/** The names `nest-rate-limit` exports to `import`, loaded by `node` from the package's root. */
function importedNames(): string[] {
  const script = 'import("nest-rate-limit").then((m) => console.log(JSON.stringify(Object.keys(m).sort())))';
  const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 20_000 });
  if (run.status !== 0) throw new Error(`node failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as string[];
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
    const esm = importedNames();
    expect(esm).toContain('RateLimitModule');
    // Without require(esm), require() takes the CommonJS build (as Jest's CommonJS runtime does). It cannot
    // load Nest 12, which is ESM only, so only the names are compared here: test/consumers runs it on Nest 10/11.
    const cjsIndex = join(DIST, 'cjs', 'index.js');
    const source = readFileSync(cjsIndex, 'utf8');
    const cjs = [...source.matchAll(/Object\.defineProperty\(exports, "(\w+)"/g)]
      .map((match) => match[1])
      .filter((name) => name !== '__esModule')
      .sort();
    expect(cjs).toEqual(esm);
  });
});
