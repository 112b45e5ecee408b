import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import type { Browser } from 'playwright-core';

import { launchChromium } from './browser.js';
import { serveStatic } from './static-server.js';

/**
 * The docs site of the tests of test/docs/site/, built once for the run by the project's global setup
 * (test/provision/jest-site.mjs) as the Pages deployment builds it: under the path of package.json's "homepage"
 * (a base other than `/`, so that a link or asset that ignores the base shows up as a failed request).
 */
export interface BuiltSite {
  /** The folder served as the host's root. */
  readonly dir: string;
  /** Where the pages are: `dir` + the base. */
  readonly outDir: string;
  /** The base path, `/nest-rate-limit/`. */
  readonly base: string;
}

const ROOT = join(import.meta.dirname, '..', '..');

/** The site the global setup built; fails when the test runs without it (outside the `site` project). */
export function builtSite(): BuiltSite {
  const dir = process.env.DOCS_SITE_DIR;
  if (dir === undefined || !existsSync(dir)) {
    throw new Error('no built docs site: run test/docs/site/ with Jest, whose global setup builds it (jest.config.js)');
  }
  const { homepage } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { homepage: string };
  const base = new URL(homepage).pathname;
  return { dir, outDir: join(dir, base), base };
}

/** The built pages under `dir` (404.html aside), sorted. */
export function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.html') && entry.name !== '404.html')
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/** The site path of a built page: `<base>getting-started.html`. */
export function sitePath(site: BuiltSite, file: string): string {
  return site.base + relative(site.outDir, file).split('\\').join('/');
}

/**
 * Serves the built site and starts chromium before a file's tests, and stops both after them.
 * @example const served = servedSite(); it('…', async () => { const page = await served().browser.newPage(); });
 */
export function servedSite(): () => BuiltSite & { url: string; browser: Browser } {
  let served: (BuiltSite & { url: string; browser: Browser }) | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const site = builtSite();
    const server = await serveStatic(site.dir);
    close = () => server.close();
    served = { ...site, url: server.url, browser: await launchChromium() };
  }, 60_000);
  afterAll(async () => {
    await served?.browser.close();
    await close?.();
  });
  return () => {
    if (served === undefined) throw new Error('the site is served in beforeAll: use it in a hook or a test');
    return served;
  };
}

/**
 * Loads each of `files` in one chromium tab and gives what went wrong: a status other than 200, a console error,
 * a page error, a failed request (an aborted one too, when what it asked for is not there).
 */
export async function problemsLoading(
  served: BuiltSite & { url: string; browser: Browser },
  files: readonly string[],
): Promise<string[]> {
  const context = await served.browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  let current = '';
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const source = message.location().url;
    problems.push(`${current}: console error: ${message.text()}${source ? ` (${source})` : ''}`);
  });
  page.on('pageerror', (error) => problems.push(`${current}: page error: ${error.message}`));
  // VitePress prefetches the pages a page links to while the browser is idle; going on to the next page aborts
  // those still on their way. An aborted request is checked below: what it asked for must be there.
  const aborted = new Map<string, string>();
  page.on('requestfailed', (request) => {
    const error = request.failure()?.errorText ?? '?';
    if (error === 'net::ERR_ABORTED') aborted.set(request.url(), current);
    else problems.push(`${current}: request failed: ${request.url()} (${error})`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${current}: ${response.status()} for ${response.url()}`);
  });
  try {
    for (const file of files) {
      current = sitePath(served, file);
      const response = await page.goto(served.url + current, { waitUntil: 'networkidle' });
      if (response?.status() !== 200) problems.push(`${current}: status ${response?.status()}`);
      // VitePress renders the page's content in .vp-doc (or the home layout's hero) once the app is up.
      await page.locator('.vp-doc, .VPHome').first().waitFor({ state: 'visible' });
    }
  } finally {
    await context.close();
  }
  for (const [url, from] of aborted) {
    const status = (await fetch(url)).status;
    if (status !== 200) problems.push(`${from}: ${status} for ${url} (its request was aborted)`);
  }
  return problems;
}
