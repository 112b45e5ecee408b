import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { packDryRun, type PackSummary, SIZE_PAGE, SIZE_PATTERN, sizeText } from '../../../etc/package-size.mjs';

// What ships is what runs: the tarball npm would publish, listed from dist/ as built (npm pack without its
// prepack build), holds the package's entry points and what they load, and nothing a Nest app never runs (tests,
// the bench, the docs' sources, TypeScript sources, source maps, the simulators). Its size is held to
// a budget, and the size the compatibility page states is the size it is (`node etc/package-size.mjs --write`).

const ROOT = join(import.meta.dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  main: string;
  types: string;
  bin?: Record<string, string>;
  exports: Record<string, unknown>;
};

/** The budget, with room for about a tenth of growth: a jump past it is a file that should not ship. */
const BUDGET = { packedBytes: 460_000, unpackedBytes: 2_600_000, files: 850 };

let pack: PackSummary;
let paths: string[];

beforeAll(() => {
  pack = packDryRun(ROOT);
  paths = pack.files.map((file) => file.path);
}, 60_000);

/** Every file package.json points a loader at: main, types, bin and each condition of each export. */
function targets(value: unknown): string[] {
  if (typeof value === 'string') return [value.replace(/^\.\//, '')];
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(targets);
  return [];
}

describe('the published tarball', () => {
  it('holds every file package.json names', () => {
    const named = [pkg.main, pkg.types, ...targets(pkg.exports)].map((path) => path.replace(/^\.\//, ''));
    expect(named.filter((path) => !paths.includes(path))).toEqual([]);
  });

  it('holds dist/ and the package files only', () => {
    const outside = paths.filter(
      (path) => !path.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'].includes(path),
    );
    expect(outside).toEqual([]);
  });

  it('holds no source, map, build info, test, bench or docs file', () => {
    const unwanted = paths.filter(
      (path) =>
        (path.endsWith('.ts') && !path.endsWith('.d.ts')) ||
        /\.(map|tsbuildinfo|spec\.js|lua|sql|md)$/.test(path.replace(/^(README|CHANGELOG)\.md$/, '')) ||
        /(^|\/)(test|tests|bench|docs|sample-app|ops|etc|\.tmp)\//.test(path),
    );
    expect(unwanted).toEqual([]);
  });

  // The simulators and their command line are a workspace of their own (packages/simulator), not published:
  // a Nest app never runs them. The operator's command line (`npx nest-rate-limit`) ships once: ESM, without
  // types or a CommonJS twin, under the one bin.
  it("holds no simulator, and the operator's command line once", () => {
    const tools = paths.filter((path) => /(^|\/)(simulator|fleet|cli-flags)(\/|\.)/.test(path));
    expect(tools).toEqual([]);
    expect(pkg.bin).toEqual({ 'nest-rate-limit': 'dist/cli/main.js' });
    expect(paths.filter((path) => /(^|\/)cli\//.test(path) && !/^dist\/cli\/[a-z-]+\.js$/.test(path))).toEqual([]);
    expect(paths).toContain('dist/cli/main.js');
  });

  it('stays within its budget', () => {
    const measured = { packedBytes: pack.size, unpackedBytes: pack.unpackedSize, files: paths.length };
    const over = Object.entries(measured).filter(([name, value]) => value > BUDGET[name as keyof typeof BUDGET]);
    expect(over).toEqual([]);
  });

  // Regression: the page said 713 files, written by hand, where the tarball had 725. The numbers are measured:
  // a file added to lib/ changes them, and `npm run build && node etc/package-size.mjs --write` writes them again.
  it('is as large as the compatibility page says', () => {
    const page = readFileSync(join(ROOT, SIZE_PAGE), 'utf8');
    expect([SIZE_PAGE, SIZE_PATTERN.exec(page)?.[0]]).toEqual([SIZE_PAGE, sizeText(pack)]);
  });
});
