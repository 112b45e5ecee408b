// The generated pages of the docs site, written before VitePress builds (`npm run docs:build`, `npm run docs:dev`)
// and never committed (docs/api/ and docs/bench/ are ignored):
// - docs/api/: the API reference, TypeDoc (with typedoc-plugin-markdown) over the sources of each entry point of
//   package.json's `exports`;
// - docs/bench/: the benchmark results, bench/RESULTS*.md as they are, their charts linked where they live.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Application } from 'typedoc';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}docs/api`;
const BENCH_OUT = `${ROOT}docs/bench`;

/** The results files of bench/, by the page each becomes (docs/bench/<page>.md). */
const BENCH_PAGES = {
  http: 'RESULTS.md',
  'in-process': 'RESULTS-in-process.md',
  postgres: 'RESULTS-postgres.md',
  features: 'RESULTS-features.md',
};

rmSync(BENCH_OUT, { recursive: true, force: true });
mkdirSync(BENCH_OUT, { recursive: true });
for (const [page, file] of Object.entries(BENCH_PAGES)) {
  // An image a results file names beside itself (`![…](results.svg)`) is in bench/, two levels up from the page.
  const text = readFileSync(`${ROOT}bench/${file}`, 'utf8').replace(/\]\(([\w.-]+\.svg)\)/g, '](../../bench/$1)');
  writeFileSync(`${BENCH_OUT}/${page}.md`, text);
}

/** Each entry point by the source its ES module build is compiled from: `./dist/<path>.js` from `lib/<path>.ts`. */
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8'));
const entryPoints = Object.values(pkg.exports)
  .filter((target) => typeof target === 'object')
  .map((target) => ROOT + target.import.default.replace(/^\.\/dist\//, 'lib/').replace(/\.js$/, '.ts'));

rmSync(OUT, { recursive: true, force: true });
const app = await Application.bootstrapWithPlugins({
  entryPoints,
  tsconfig: `${ROOT}tsconfig.build.json`,
  plugin: ['typedoc-plugin-markdown'],
  out: OUT,
  name: 'API reference',
  readme: 'none',
  // Module names as users import them (`nest-rate-limit/testing`), not as source paths.
  entryFileName: 'index',
  hidePageHeader: true,
  hideBreadcrumbs: true,
  useCodeBlocks: true,
  excludePrivate: true,
  excludeInternal: true,
  sanitizeComments: true,
  disableSources: true,
  validation: { notExported: false, invalidLink: true, rewrittenLink: true },
  treatWarningsAsErrors: false,
  logLevel: 'Warn',
});
const project = await app.convert();
if (!project) throw new Error('TypeDoc could not convert the sources (see the errors above)');
// TypeDoc names a module after its file (`index`, `testing`); the reader imports it by its subpath.
for (const module of project.children ?? []) {
  module.name = module.name === 'index' ? pkg.name : `${pkg.name}/${module.name}`;
}
// In the order a reader meets them: the package, then its subpaths.
const byName = (a, b) => a.name.localeCompare(b.name);
project.children?.sort(byName);
for (const group of project.groups ?? []) group.children.sort(byName);
await app.generateOutputs(project);
if (app.logger.hasErrors()) process.exit(1);
