// The generated pages of the docs site, written before VitePress builds (`npm run docs:build`, `npm run docs:dev`)
// and never committed (docs/api/ and docs/bench/ are ignored):
// - docs/api/: the API reference, TypeDoc (with typedoc-plugin-markdown) over the sources of each entry point of
//   package.json's `exports`;
// - docs/bench/: the benchmark results, bench/RESULTS*.md as they are, their charts linked where they live.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Application, Comment, ReflectionKind } from 'typedoc';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = `${ROOT}docs/api`;
const BENCH_OUT = `${ROOT}docs/bench`;

/** The results files of bench/, by the page each becomes (docs/bench/<page>.md). */
const BENCH_PAGES = {
  http: 'RESULTS.md',
  'in-process': 'RESULTS-in-process.md',
  postgres: 'RESULTS-postgres.md',
  features: 'RESULTS-features.md',
  'redis-probe': 'RESULTS-redis-probe.md',
  profile: 'RESULTS-profile.md',
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
  // Each index lists its members with the first line of their comment.
  indexFormat: 'table',
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
// The API index describes each module in a line: a subpath's entry file says what it is for in its opening
// comment (`nest-rate-limit/testing`: what a test ... needs), which TypeDoc gives to its first export instead.
const MAIN_SUMMARY = 'The module, its decorators, the guard, the stores, the service and their types.';
for (const module of project.children ?? []) {
  const file = entryPoints.find((entry) =>
    entry.endsWith(module.name === pkg.name ? '/lib/index.ts' : `/${module.name.slice(pkg.name.length + 1)}/index.ts`),
  );
  const opening = /^\/\*\*([\s\S]*?)\*\//.exec(file ? readFileSync(file, 'utf8') : '')?.[1] ?? '';
  const words = opening
    .replace(/^\s*\* ?/gm, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^`[^`]+`: /, '');
  const text = module.name === pkg.name ? MAIN_SUMMARY : words.charAt(0).toUpperCase() + words.slice(1);
  if (text !== '') module.comment = new Comment([{ kind: 'text', text }]);
}
// A class that extends Error or Nest's HttpException would list every member it inherits from them (stack,
// getResponse(), initName()...): what it adds is what a reader looks for; its "Extends" line names the rest.
// The page is drawn from the class's groups, which TypeDoc made before: they lose those members too.
for (const cls of project.getReflectionsByKind(ReflectionKind.Class)) {
  for (const member of [...(cls.children ?? [])]) {
    if (member.inheritedFrom !== undefined && member.inheritedFrom.reflection === undefined) {
      project.removeReflection(member);
    }
  }
  const kept = new Set(cls.children ?? []);
  for (const group of cls.groups ?? []) group.children = group.children.filter((child) => kept.has(child));
  cls.groups = cls.groups?.filter((group) => group.children.length > 0);
}
// In the order a reader meets them: the package, then its subpaths.
const byName = (a, b) => a.name.localeCompare(b.name);
project.children?.sort(byName);
for (const group of project.groups ?? []) group.children.sort(byName);
await app.generateOutputs(project);
if (app.logger.hasErrors()) process.exit(1);

/**
 * The first sentence of an index's description, for a one-line summary: up to the first full stop outside code
 * and brackets; when that is past 160 characters, up to a comma or semicolon (the last before 160, else the first
 * after), with an ellipsis.
 */
export function firstSentence(text) {
  let depth = 0;
  let code = false;
  let before = -1;
  let after = -1;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '`') code = !code;
    if (code) continue;
    if (c === '(' || c === '[') depth++;
    if ((c === ')' || c === ']') && depth > 0) depth--;
    if (depth > 0) continue;
    if (c === '.' && (i === text.length - 1 || text[i + 1] === ' ')) {
      end = i + 1;
      break;
    }
    if (c === ',' || c === ';') {
      if (i < 160) before = i;
      else if (after < 0) after = i;
    }
  }
  if (end <= 160) return text.slice(0, end);
  const cut = before >= 0 ? before : after;
  return cut < 0 ? text.slice(0, end) : `${text.slice(0, cut)}…`;
}

/** Each index page's table rows with their description cut to its first sentence. */
function summarizeIndexes(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) summarizeIndexes(path);
    else if (entry.name === 'index.md') {
      const text = readFileSync(path, 'utf8').replace(
        /^(\| \[[^\]]+\]\([^)]+\) \| )(.+?)( \|)$/gm,
        (_, head, description, tail) => `${head}${firstSentence(description)}${tail}`,
      );
      writeFileSync(path, text);
    }
  }
}
summarizeIndexes(OUT);

/** The folders TypeDoc writes a module's pages into, by the heading each gets in the sidebar. */
const KINDS = {
  classes: 'Classes',
  functions: 'Functions',
  interfaces: 'Interfaces',
  'type-aliases': 'Type aliases',
  variables: 'Variables',
  enumerations: 'Enumerations',
};

/** The sidebar of one module's folder: its index, then a collapsed group of pages per kind. */
function moduleSidebar(dir, link, text) {
  const entries = readdirSync(dir, { withFileTypes: true });
  const groups = Object.entries(KINDS).flatMap(([folder, heading]) => {
    const pages = entries.find((entry) => entry.isDirectory() && entry.name === folder)
      ? readdirSync(`${dir}/${folder}`).filter((file) => file.endsWith('.md'))
      : [];
    if (pages.length === 0) return [];
    const items = pages
      .sort()
      .map((file) => ({ text: file.slice(0, -3), link: `${link}${folder}/${file.slice(0, -3)}` }));
    return [{ text: heading, collapsed: true, items }];
  });
  // Subpaths (`nest-rate-limit/testing`) are folders of the package's module that are not kinds.
  const subpaths = entries
    .filter((entry) => entry.isDirectory() && !(entry.name in KINDS))
    .map((entry) => moduleSidebar(`${dir}/${entry.name}`, `${link}${entry.name}/`, `${text}/${entry.name}`));
  return [{ text, link, collapsed: false, items: groups }, ...subpaths.flat()];
}

// The API reference gets a tree of its own in the site's sidebar (docs/.vitepress/config.mts reads it), not the
// guide's.
writeFileSync(
  `${OUT}/sidebar.json`,
  `${JSON.stringify([{ text: 'API reference', link: '/api/' }, ...moduleSidebar(`${OUT}/${pkg.name}`, `/api/${pkg.name}/`, pkg.name)], null, 2)}\n`,
);
