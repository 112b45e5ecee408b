#!/usr/bin/env node
// The package's size as docs/compatibility.md states it ("380 kB packed, 2.1 MB unpacked, 729 files"), measured
// on the tarball npm would publish from dist/ as built (`npm pack --dry-run`, without its prepack build: run
// `npm run build` first). `node etc/package-size.mjs` prints the numbers; `--write` writes them into the page.
// test/unit/release/tarball.spec.ts fails while the page's numbers are not the tarball's: a file added to lib/
// changes them, and this script is how they are written again.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The page that states the size, from the repository's root. */
export const SIZE_PAGE = 'docs/compatibility.md';

/** The numbers on that page, wherever they stand in its text. */
export const SIZE_PATTERN = /\d+ kB packed, [\d.]+ MB unpacked, \d+ files/;

/** What `npm pack --dry-run --json` says of the tarball: its size, unpacked size and files. */
export function packDryRun(root = ROOT) {
  // Under `npm run`/`npm test`, the npm that runs us (npm_execpath), else the one on the PATH.
  const npm = process.env.npm_execpath;
  const [command, args] = npm ? [process.execPath, [npm]] : ['npm', []];
  const output = execFileSync(command, [...args, 'pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(output)[0];
}

/**
 * The page's words for a tarball: its packed size in kB (1000 bytes) to the nearest 10, unpacked in MB (10^6
 * bytes) to a tenth, and the exact count of its files. Rounded so that a comment changed in lib/ (which changes
 * the size by some bytes) does not make the page wrong; a file added or removed does.
 */
export function sizeText(pack) {
  const packedKb = Math.round(pack.size / 10_000) * 10;
  const unpackedMb = (pack.unpackedSize / 1e6).toFixed(1);
  return `${packedKb} kB packed, ${unpackedMb} MB unpacked, ${pack.files.length} files`;
}

/** The page's text with its numbers replaced by `text`; throws when the page has no numbers to replace. */
export function withSize(page, text) {
  if (!SIZE_PATTERN.test(page)) throw new Error(`${SIZE_PAGE} has no "<n> kB packed, <n> MB unpacked, <n> files"`);
  return page.replace(SIZE_PATTERN, text);
}

if (process.argv[1] && new URL(`file://${process.argv[1]}`).href === import.meta.url) {
  const text = sizeText(packDryRun());
  if (process.argv.includes('--write')) {
    const path = `${ROOT}${SIZE_PAGE}`;
    const page = readFileSync(path, 'utf8');
    const written = withSize(page, text);
    if (written !== page) writeFileSync(path, written);
    process.stdout.write(`${SIZE_PAGE}: ${text}${written === page ? ' (unchanged)' : ''}\n`);
  } else {
    process.stdout.write(`${text}\n`);
  }
}
