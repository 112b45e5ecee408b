import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { CUT_AFTER_LINE, CUT_LINE, shownPart } from '../../docs/.vitepress/cut-sample.js';

// Every TypeScript sample of the docs site and of the README is a whole file that compiles, strict, against the
// package's sources (tsconfig.json's `paths` map `nest-rate-limit` to lib/). A sample that shows a fragment
// carries the lines that make it whole above a `// ---cut---` line and below a `// ---cut-after---` line, which
// the site does not show (docs/.vitepress/cut-sample.ts).

const ROOT = join(import.meta.dirname, '..', '..');
const OUT = join(ROOT, '.tmp', 'docs-samples');
/** Generated from the sources or copied from bench/: no sample of ours. */
const GENERATED = new Set(['docs/api', 'docs/bench', 'docs/.vitepress']);

interface Sample {
  /** Where the sample starts: `docs/page.md:<line of its first line of code>`. */
  where: string;
  page: string;
  firstLine: number;
  code: string;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return GENERATED.has(path) ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The ```ts blocks of a Markdown file, with the line each starts at. */
function samplesOf(page: string): Sample[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const samples: Sample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\b/.test(lines[i] ?? '')) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end < 0) throw new Error(`${page}:${i + 1}: a code block that never ends`);
    samples.push({ where: `${page}:${i + 2}`, page, firstLine: i + 2, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return samples;
}

const pages = ['README.md', ...markdownFiles('docs')];
const samples = pages.flatMap(samplesOf);

/** The file a sample is compiled as: named after its page and line, so an error points back at it. */
function fileOf(sample: Sample): string {
  return `${sample.page.replace(/[/.]/g, '_')}_L${sample.firstLine}.ts`;
}

describe('the TypeScript samples of the docs site and the README', () => {
  it('are found on the pages that show code', () => {
    const shown = new Set(samples.map((sample) => sample.page));
    for (const page of ['README.md', 'docs/getting-started.md', 'docs/policies.md', 'docs/testing.md']) {
      expect(shown).toContain(page);
    }
  });

  it('each have at most one cut line of each kind, in order, and show some code', () => {
    for (const sample of samples) {
      const lines = sample.code.split('\n').map((line) => line.trim());
      const cut = lines.indexOf(CUT_LINE);
      const after = lines.indexOf(CUT_AFTER_LINE);
      const problems = [
        lines.filter((line) => line === CUT_LINE).length > 1 && 'two cut lines',
        lines.filter((line) => line === CUT_AFTER_LINE).length > 1 && 'two cut-after lines',
        after >= 0 && after < cut && 'a cut-after line above the cut line',
        shownPart(sample.code).trim() === '' && 'nothing left to show',
      ].filter(Boolean);
      expect([sample.where, problems]).toEqual([sample.where, []]);
    }
  });

  it('compile as whole files, strict, against the package', () => {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    // `export {}` makes each sample a module of its own, so two samples never share a top-level name.
    for (const sample of samples) writeFileSync(join(OUT, fileOf(sample)), `${sample.code}\nexport {};\n`);
    writeFileSync(
      join(OUT, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.json',
        compilerOptions: { noEmit: true },
        include: [
          '*.ts',
          '../../test/docs/express.d.ts',
          '../../test/docs/nestjs-config.d.ts',
          '../../test/docs/vitest-config.d.ts',
        ],
      }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', OUT, '--pretty', 'false'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    // Each error as `page.md:<line>: message`, the line being the Markdown file's.
    const byFile = new Map(samples.map((sample) => [fileOf(sample), sample]));
    const errors = output
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const match = /^(?:.*\/)?([^/(]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line);
        const sample = match ? byFile.get(match[1] ?? '') : undefined;
        if (!match || !sample) return relative(ROOT, line);
        return `${sample.page}:${sample.firstLine + Number(match[2]) - 1}: ${match[4]}`;
      });
    expect(errors).toEqual([]);
  }, 180_000);
});
