import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The Testing examples of the docs (docs/testing.md, once the README's Testing section) are tests: each
// `readme:start <name>` … `readme:end` region of the files here must stand in that page exactly as it is here
// (so an example that no longer passes cannot stay there).

const HERE = fileURLToPath(new URL('.', import.meta.url));
const PAGE = readFileSync(fileURLToPath(new URL('../../docs/testing.md', import.meta.url)), 'utf8');

function regions(): [string, string][] {
  const out: [string, string][] = [];
  for (const file of readdirSync(HERE).filter((f) => f.endsWith('.spec.ts'))) {
    const text = readFileSync(HERE + file, 'utf8');
    for (const match of text.matchAll(/^ *\/\/ readme:start (\S+)\n([\s\S]*?)^ *\/\/ readme:end\n/gm)) {
      const lines = (match[2] ?? '').split('\n');
      const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)?.[0].length ?? 0));
      out.push([
        `${file} ${match[1]}`,
        lines
          .map((l) => l.slice(indent))
          .join('\n')
          .trimEnd(),
      ]);
    }
  }
  return out;
}

describe('the Testing examples of docs/testing.md', () => {
  it('are there to be checked', () => {
    expect(regions().map(([name]) => name)).toEqual(
      expect.arrayContaining(['one-app-per-file.spec.ts one-app-per-file', 'redis-e2e.spec.ts redis-e2e']),
    );
  });

  it.each(regions())('%s stands in docs/testing.md as it is tested', (_name, code) => {
    expect(PAGE).toContain(code);
  });

  // The consumer app that runs the example under Vitest must run this example, not an older copy of it.
  it('is what the Vitest consumer runs, but for the import of Vitest', () => {
    const vitest = readFileSync(join(HERE, '..', 'consumers', 'nest12-vitest', 'e2e', 'hello.e2e-spec.ts'), 'utf8');
    const example = regions().find(([name]) => name.endsWith(' one-app-per-file'))?.[1];
    const body = vitest
      .split('\n')
      .filter(
        (line) =>
          !line.startsWith('//') &&
          !line.startsWith("import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';"),
      )
      .join('\n')
      .trim();
    expect(body).toBe(example);
  });
});
