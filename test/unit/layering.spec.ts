import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/**
 * The layers of lib/ (CONTRIBUTING.md, "Layers"): each folder, and what it may import from lib/. A folder
 * imports its own files and the folders listed here, nothing above. The entry points (lib/index.ts and the
 * folders of the package's subpaths) may import anything. Each module's imports are read from its source.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  util: [],
  lists: ['util'],
  policy: ['util', 'lists'],
  algorithms: ['util', 'policy'],
  stores: ['util', 'policy', 'algorithms'],
  metrics: ['util', 'policy'],
  engine: ['util', 'policy', 'algorithms', 'stores', 'metrics'],
  shedding: ['util', 'policy'],
  keys: ['util'],
  responses: ['util', 'policy'],
  planning: ['util', 'policy', 'lists'],
  contexts: ['util', 'policy', 'keys', 'responses', 'planning'],
  limiter: [
    'util',
    'policy',
    'lists',
    'algorithms',
    'stores',
    'metrics',
    'engine',
    'shedding',
    'responses',
    'planning',
    'contexts',
  ],
  service: ['util', 'policy', 'algorithms', 'stores', 'engine', 'responses', 'planning', 'limiter'],
  // The operator's command line (bin: nest-rate-limit): the stores and what reads them.
  cli: ['util', 'policy', 'algorithms', 'stores', 'engine'],
  nest: [
    'util',
    'policy',
    'lists',
    'algorithms',
    'stores',
    'metrics',
    'engine',
    'shedding',
    'keys',
    'responses',
    'planning',
    'contexts',
    'limiter',
    'service',
    'cli',
  ],
};

/** The entry points: lib/index.ts and the subpath exports' folders (package.json "exports"). */
const ENTRIES = ['index.ts', 'testing', 'graphql', 'websockets', 'microservices'];

/** Inside the engine: its leases and the coherence of its cache of denials sit below the engine itself. */
const ENGINE_PARTS: Readonly<Record<string, readonly string[]>> = {
  'engine/leases': ['engine/evaluation.ts'],
  'engine/coherence': ['engine/evaluation.ts', 'engine/leases'],
};

/** Which folders may import Nest's core (Reflector, discovery, the HTTP adapter): where Nest is driven. */
const NEST_CORE = ['planning', 'contexts', 'nest'];

const LIB = join(import.meta.dirname, '../../lib');
const posix = (path: string) => path.split(sep).join('/');

/** Each module of lib/ (its path under lib/) with what it imports: lib/ paths, or package names. */
const modules = readdirSync(LIB, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts'))
  .map((file) => {
    const source = readFileSync(join(LIB, file), 'utf8');
    const imports = [...source.matchAll(/^(?:import|export)\b[^'"]*?from '([^']+)'/gms)].map(([, spec = '']) =>
      spec.startsWith('.')
        ? posix(relative(LIB, normalize(join(LIB, dirname(file), spec)))).replace(/\.js$/, '.ts')
        : spec,
    );
    return { file: posix(file), imports };
  });

const folderOf = (path: string) => path.split('/')[0] ?? path;
const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/** The imports that break the layers, as "module -> import". */
function crossings(): string[] {
  return modules.flatMap(({ file, imports }) => {
    const folder = folderOf(file);
    if (ENTRIES.includes(folder)) return [];
    const allowed = MAY_IMPORT[folder];
    if (allowed === undefined) return [`${file}: a folder the layers do not name`];
    return imports
      .filter((i) => !i.startsWith('@') && i.includes('/') && i.endsWith('.ts'))
      .filter((i) => folderOf(i) !== folder && !allowed.includes(folderOf(i)))
      .map((i) => `${file} -> ${i}`);
  });
}

/**
 * The import cycles of a graph (module -> the modules it imports), each once, as the path around it from its
 * first module in sorted order: "a.ts -> b.ts -> a.ts". A depth-first walk: an import of a module still on the
 * walk's path closes a cycle.
 */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found = new Map<string, string>();
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) {
        const cycle = path.slice(at);
        const first = cycle.indexOf([...cycle].sort()[0] ?? next);
        const around = [...cycle.slice(first), ...cycle.slice(0, first)];
        found.set([...around].sort().join(' '), [...around, around[0]].join(' -> '));
      } else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) if (!done.has(file)) visit(file);
  return [...found.values()].sort();
}

/** The table of CONTRIBUTING.md's "Layers": folder -> the folders it may import. */
function contributingTable(): Record<string, string[]> {
  const text = readFileSync(join(import.meta.dirname, '../../CONTRIBUTING.md'), 'utf8');
  const section = text.slice(text.indexOf('## Layers'), text.indexOf('\n## ', text.indexOf('## Layers') + 1));
  const rows = [...section.matchAll(/^\| `([a-z]+)\/` +\| (.+?) +\|$/gm)];
  const folders = rows.map(([, folder = '']) => folder);
  const named = (cell: string) => [...cell.matchAll(/`([a-z]+)\/`/g)].map(([, f = '']) => f).filter((f) => f !== 'lib');
  return Object.fromEntries(
    rows.map(([, folder = '', cell = '']) => [
      folder,
      cell === 'every folder' ? folders.filter((f) => f !== folder) : named(cell),
    ]),
  );
}

describe('the layers of lib/', () => {
  it('are the ones CONTRIBUTING.md states', () => {
    const sorted = (table: Readonly<Record<string, readonly string[]>>) =>
      Object.fromEntries(Object.entries(table).map(([folder, deps]) => [folder, [...deps].sort()]));
    expect(sorted(contributingTable())).toEqual(sorted(MAY_IMPORT));
  });

  it('reads the imports of every module', () => {
    expect(modules.length).toBeGreaterThan(150);
    expect(modules.find((m) => m.file === 'engine/decision-engine.ts')?.imports).toContain(
      'stores/rate-limit-store.ts',
    );
  });

  it('names every folder of lib/, and the root holds only the entry point', () => {
    const folders = new Set(modules.map(({ file }) => folderOf(file)));
    expect([...folders].filter((f) => !ENTRIES.includes(f) && MAY_IMPORT[f] === undefined)).toEqual([]);
    expect(modules.filter(({ file }) => !file.includes('/')).map(({ file }) => file)).toEqual(['index.ts']);
  });

  it('each folder imports only the folders below it', () => {
    expect(crossings()).toEqual([]);
  });

  it('the layers have no cycle: a folder below never lists one above', () => {
    const order = Object.keys(MAY_IMPORT);
    const upward = order.flatMap((folder, i) =>
      (MAY_IMPORT[folder] ?? []).filter((dep) => order.indexOf(dep) >= i).map((dep) => `${folder} -> ${dep}`),
    );
    expect(upward).toEqual([]);
  });

  it('no module imports itself through others: lib/ has no import cycle, type imports included', () => {
    const files = new Set(modules.map(({ file }) => file));
    const graph = new Map(modules.map(({ file, imports }) => [file, imports.filter((i) => files.has(i))]));
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('finds and names the cycles of a graph', () => {
    const graph = new Map([
      ['c.ts', ['a.ts', 'd.ts']],
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['d.ts', ['d.ts']],
      ['e.ts', ['a.ts']],
    ]);
    expect(cyclesOf(graph)).toEqual(['a.ts -> b.ts -> c.ts -> a.ts', 'd.ts -> d.ts']);
  });

  it("the engine's leases and coherence know nothing of the engine above them", () => {
    const breaks = Object.entries(ENGINE_PARTS).flatMap(([part, allowed]) =>
      modules
        .filter(({ file }) => under(file, part))
        .flatMap(({ file, imports }) =>
          imports
            .filter((i) => under(i, 'engine') && !under(i, part) && !allowed.some((a) => under(i, a)))
            .map((i) => `${file} -> ${i}`),
        ),
    );
    expect(breaks).toEqual([]);
  });

  it("Nest's core is imported only where Nest is driven", () => {
    const users = modules
      .filter(({ imports }) => imports.some((i) => i.startsWith('@nestjs/core')))
      .map(({ file }) => folderOf(file));
    expect([...new Set(users)].filter((f) => !NEST_CORE.includes(f) && !ENTRIES.includes(f))).toEqual([]);
  });

  it('the algorithms, stores, engine and metrics import nothing of Nest', () => {
    const users = modules
      .filter(({ file }) => ['util', 'algorithms', 'stores', 'engine', 'metrics'].includes(folderOf(file)))
      .filter(({ imports }) => imports.some((i) => i.startsWith('@nestjs/')))
      .map(({ file }) => file);
    expect(users).toEqual([]);
  });
});
