import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The README's Testing examples are tests: each `readme:start <name>` … `readme:end` region of the files here
// must stand in the README exactly as it is here (so an example that no longer passes cannot stay there).

const HERE = fileURLToPath(new URL('.', import.meta.url));
const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');

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

describe("the README's Testing examples", () => {
  it('are there to be checked', () => {
    expect(regions().map(([name]) => name)).toEqual(
      expect.arrayContaining(['one-app-per-file.spec.ts one-app-per-file', 'redis-e2e.spec.ts redis-e2e']),
    );
  });

  it.each(regions())('%s stands in the README as it is tested', (_name, code) => {
    expect(README).toContain(code);
  });
});
