#!/usr/bin/env node
// Prints the CHANGELOG.md entry of a release tag (`node .ci/changelog-entry.mjs v0.2.0`): the release workflow
// publishes only when the tag is package.json's version and that version has its "## <version>" entry, so a
// release never goes out with notes still under "Unreleased".
import { readFileSync } from 'node:fs';

const ROOT = new URL('..', import.meta.url);

/** The text under `## <version>` up to the next `## `, or an error saying what is missing. */
export function changelogEntry(changelog, version) {
  const lines = changelog.split('\n');
  const start = lines.findIndex((line) => line.trim() === `## ${version}` || line.startsWith(`## ${version} `));
  if (start < 0) throw new Error(`CHANGELOG.md has no "## ${version}" entry: move the Unreleased lines under it`);
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  const entry = lines
    .slice(start + 1, end < 0 ? undefined : end)
    .join('\n')
    .trim();
  if (entry === '') throw new Error(`CHANGELOG.md's "## ${version}" entry is empty`);
  return entry;
}

if (process.argv[1] && new URL(`file://${process.argv[1]}`).href === import.meta.url) {
  const tag = process.argv[2] ?? '';
  const { version } = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8'));
  try {
    if (tag !== `v${version}`)
      throw new Error(`the tag is "${tag}", package.json's version is ${version}: tag v${version}`);
    process.stdout.write(`${changelogEntry(readFileSync(new URL('CHANGELOG.md', ROOT), 'utf8'), version)}\n`);
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
