import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

import type { Browser } from 'playwright-core';

import { launchChromium } from '../support/browser.js';
import { serveStatic } from '../support/static-server.js';

// The docs site as a reader gets it: generated (API reference, bench pages), built by VitePress under a base path
// (as a deployment under a sub-path is), served as static files, and every page loaded in Debian's chromium.

const ROOT = join(import.meta.dirname, '..', '..');
/** A base path other than `/`, so that a link or asset that ignores DOCS_BASE shows up as a failed request. */
const BASE = '/nest-rate-limit/';
const SCREENSHOTS = join(ROOT, '.tmp', 'screenshots');

function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return htmlFiles(path);
    return entry.name.endsWith('.html') ? [path] : [];
  });
}

/** The site path of a built page: `<base>getting-started.html`. */
function sitePath(outDir: string, file: string): string {
  return BASE + relative(outDir, file).split('\\').join('/');
}

/** The ids a page's elements carry: the targets of `#anchor` links. */
function idsOf(html: string): Set<string> {
  return new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => decodeURIComponent(match[1] ?? '')));
}

let dir: string;
let outDir: string;
let pages: string[];
let site: Awaited<ReturnType<typeof serveStatic>>;
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'docs-site-'));
  outDir = join(dir, BASE.slice(1, -1));
  const run = (args: string[]) =>
    execFileSync(process.execPath, args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: 'pipe',
      env: { ...process.env, DOCS_BASE: BASE },
    });
  run(['etc/docs-generate.mjs']);
  run(['node_modules/vitepress/bin/vitepress.js', 'build', 'docs', '--outDir', outDir]);
  pages = htmlFiles(outDir)
    .filter((file) => relative(outDir, file) !== '404.html')
    .sort();
  site = await serveStatic(dir);
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the docs site, built and served under a base path', () => {
  it('has every page the sidebar names, and the generated API reference and bench results', () => {
    const built = new Set(pages.map((file) => sitePath(outDir, file)));
    for (const page of [
      'index.html',
      'getting-started.html',
      'algorithms.html',
      'policies.html',
      'keys-and-proxies.html',
      'stores.html',
      'contexts.html',
      'failure.html',
      'responses.html',
      'service.html',
      'testing.html',
      'operations.html',
      'migration-from-throttler.html',
      'benchmarks.html',
      'troubleshooting.html',
      'api/index.html',
      'api/nest-rate-limit/classes/RateLimitService.html',
      'bench/http.html',
    ]) {
      expect(built).toContain(BASE + page);
    }
  });

  it('links only to pages and anchors that exist', () => {
    const idsByPath = new Map(pages.map((file) => [sitePath(outDir, file), idsOf(readFileSync(file, 'utf8'))]));
    const broken: string[] = [];
    for (const file of pages) {
      const from = sitePath(outDir, file);
      for (const match of readFileSync(file, 'utf8').matchAll(/<a [^>]*href="([^"]+)"/g)) {
        const href = (match[1] ?? '').replace(/&amp;/g, '&');
        if (/^[a-z]+:/i.test(href)) continue; // another site
        const url = new URL(href, `http://site${from}`);
        if (!url.pathname.startsWith(BASE)) {
          broken.push(`${from}: ${href} is outside the base path`);
          continue;
        }
        // A file the site emits (the dashboard's JSON, the rules): it must be there, as a file.
        if (url.pathname.startsWith(`${BASE}assets/`) && !url.pathname.endsWith('.html')) {
          if (!existsSync(join(outDir, url.pathname.slice(BASE.length)))) broken.push(`${from}: ${href} is no file`);
          continue;
        }
        // A directory serves its index.html, as any static host does.
        const ids = idsByPath.get(url.pathname.endsWith('/') ? `${url.pathname}index.html` : url.pathname);
        if (ids === undefined) broken.push(`${from}: ${href} names no page`);
        else if (url.hash !== '' && !ids.has(decodeURIComponent(url.hash.slice(1)))) {
          broken.push(`${from}: ${href} names no anchor of that page`);
        }
      }
    }
    expect([...new Set(broken)]).toEqual([]);
  });

  it('loads every page in chromium without a console error, a page error or a failed request', async () => {
    const context = await browser.newContext();
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
      for (const file of pages) {
        current = sitePath(outDir, file);
        const response = await page.goto(site.url + current, { waitUntil: 'networkidle' });
        expect([current, response?.status()]).toEqual([current, 200]);
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
    expect(problems).toEqual([]);
    expect(pages.length).toBeGreaterThan(40);
  }, 600_000);

  it('shows the getting-started page with its Quick start (saved as .tmp/screenshots/getting-started.png)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await page.goto(`${site.url}${BASE}getting-started.html`, { waitUntil: 'networkidle' });
      await expect(page.locator('h2#quick-start').textContent()).resolves.toContain('Quick start');
      // The sample is shown without the lines that only make it a whole file.
      await expect(page.locator('.vp-doc').textContent()).resolves.toContain('RateLimitModule.forRootAsync');
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, 'getting-started.png'), fullPage: false });
    } finally {
      await page.close();
    }
    expect(existsSync(join(SCREENSHOTS, 'getting-started.png'))).toBe(true);
  }, 120_000);

  it('hides the cut lines of a sample, and the code above them', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${site.url}${BASE}block.html`, { waitUntil: 'networkidle' });
      const code = (await page.locator('.vp-doc div[class*="language-ts"]').first().textContent()) ?? '';
      expect(code).toContain("@RateLimit({ name: 'login-ip'");
      expect(code).not.toContain('---cut');
      expect(code).not.toContain('export class AuthController');
    } finally {
      await page.close();
    }
  }, 120_000);
});
