import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// docs/testing.md shows the Jest and Vitest setups of a Nest 12 app; test/consumers/consumers-nest12-esm.spec.ts
// and consumers-nest12-vitest.spec.ts install the Nest 12 consumer apps and run their e2e tests with them. What the page shows must be what those apps run:
// each file of a code group, titled by its path, equals the consumer's file (a package.json: the fields shown).

const ROOT = join(import.meta.dirname, '..', '..');
const PAGE = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');

/** The consumer app whose files each section of the page shows. */
const SECTIONS = [
  { heading: '### Jest', consumer: 'nest12-esm' },
  { heading: '### Vitest', consumer: 'nest12-vitest' },
] as const;

/** The titled code blocks (```json [e2e/jest.config.json]) of the section under `heading`. */
function filesUnder(heading: string): { lang: string; path: string; code: string }[] {
  const at = PAGE.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`docs/testing.md has no "${heading}" section`);
  const end = PAGE.slice(at + 1).search(/\n#{2,3} /);
  const section = PAGE.slice(at, end < 0 ? undefined : at + 1 + end);
  return [...section.matchAll(/^```(\w+) \[([^\]]+)\]\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] ?? '',
    path: m[2] ?? '',
    code: m[3] ?? '',
  }));
}

const consumerFile = (consumer: string, path: string) =>
  readFileSync(join(ROOT, 'test', 'consumers', consumer, path), 'utf8');

describe.each(SECTIONS)('docs/testing.md, $heading', ({ heading, consumer }) => {
  const files = filesUnder(heading);

  it(`shows the configuration files of test/consumers/${consumer}`, () => {
    expect(files.map((f) => f.path)).toEqual(expect.arrayContaining(['package.json', 'e2e/tsconfig.json']));
    expect(files.some((f) => /^e2e\/(jest|vitest)\.config\.(json|ts)$/.test(f.path))).toBe(true);
  });

  it.each(files.map((f) => [f.path, f] as const))('shows %s as the consumer has it', (path, { lang, code }) => {
    const actual = consumerFile(consumer, path);
    if (lang === 'json' && path.endsWith('package.json')) {
      // The fields an app adds, among the consumer's others (its Nest packages, its build script).
      expect(JSON.parse(actual)).toMatchObject(JSON.parse(code) as object);
    } else if (lang === 'json') {
      expect(JSON.parse(code)).toEqual(JSON.parse(actual));
    } else {
      expect(code.trim()).toBe(actual.trim());
    }
  });
});
