import type { MarkdownRenderer } from 'vitepress';

/**
 * The lines that hide the parts of a code sample that only make it a whole file (the convention of TypeScript's
 * twoslash): what stands above `// ---cut---` (imports, the class a decorated method sits in) and from
 * `// ---cut-after---` on (that class's closing brace). test/docs/samples.spec.ts type-checks the whole file;
 * the page shows only what lies between.
 */
export const CUT_LINE = '// ---cut---';
export const CUT_AFTER_LINE = '// ---cut-after---';

/** The part of a sample the reader sees, without the indentation of the class it was cut from. */
export function shownPart(code: string): string {
  const lines = code.split('\n');
  const cut = lines.findIndex((line) => line.trim() === CUT_LINE);
  const after = lines.findIndex((line) => line.trim() === CUT_AFTER_LINE);
  if (cut < 0 && after < 0) return code;
  const shown = lines.slice(cut + 1, after < 0 ? lines.length : after);
  const indent = Math.min(
    ...shown.filter((line) => line.trim() !== '').map((line) => /^ */.exec(line)?.[0].length ?? 0),
  );
  return shown.map((line) => line.slice(Math.min(indent, line.length))).join('\n') + '\n';
}

/** Shows only the part between the cut lines of every code block that has them. */
export function cutSampleSetup(md: MarkdownRenderer): void {
  const fence = md.renderer.rules.fence;
  if (!fence) throw new Error('markdown-it has no fence renderer to wrap');
  md.renderer.rules.fence = (tokens, index, options, env, self) => {
    const token = tokens[index];
    if (token) token.content = shownPart(token.content);
    return fence(tokens, index, options, env, self);
  };
}
