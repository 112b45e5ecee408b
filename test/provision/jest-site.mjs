// Jest's global setup for test/docs/site/, the tests of the built docs site: chromium (as for test/docs), and the
// site itself, built once for the run as the Pages deployment builds it (`npm run docs:build`, config.mts's own
// base, the path of package.json's "homepage"), into a temporary folder that test/support/docs-site.ts reads
// from DOCS_SITE_DIR. (Each file used to build it for itself: three builds of one site, about a minute each.)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import chromium from './jest-chromium.mjs';
import { say } from './provision.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export default function setup() {
  chromium();
  const { homepage } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'docs-site-'));
  const env = { ...process.env };
  delete env.DOCS_BASE;
  const started = Date.now();
  const outDir = join(dir, new URL(homepage).pathname);
  const build = spawnSync('npm', ['run', 'docs:build', '--', '--outDir', outDir], { cwd: ROOT, encoding: 'utf8', env });
  if (build.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`npm run docs:build failed:\n${build.stdout}\n${build.stderr}`);
  }
  say(`the docs site: built in ${Math.round((Date.now() - started) / 1000)} s`);
  process.env.DOCS_SITE_DIR = dir;
}
