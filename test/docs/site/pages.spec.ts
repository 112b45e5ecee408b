import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { htmlFiles, servedSite, sitePath } from '../../support/docs-site.js';

// The docs site as a reader gets it: generated (API reference, bench pages), built by VitePress under a base path
// (as a deployment under a sub-path is; test/provision/jest-site.mjs builds it once for the run), served as static
// files. Every page loaded in Debian's chromium: guide-in-chromium.spec.ts and api-in-chromium.spec.ts.

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SCREENSHOTS = join(ROOT, '.tmp', 'screenshots');

/** The ids a page's elements carry: the targets of `#anchor` links. */
function idsOf(html: string): Set<string> {
  return new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => decodeURIComponent(match[1] ?? '')));
}

const served = servedSite();

/** The served site, its base and its pages. */
function theSite() {
  const site = served();
  return { site, BASE: site.base, outDir: site.outDir, pages: htmlFiles(site.outDir) };
}

describe('the docs site, built and served under a base path', () => {
  it('has every page the sidebar names, and the generated API reference and bench results', () => {
    const { site, BASE, pages } = theSite();
    expect(BASE).not.toBe('/');
    const built = new Set(pages.map((file) => sitePath(site, file)));
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
    const { site, BASE, outDir, pages } = theSite();
    const idsByPath = new Map(pages.map((file) => [sitePath(site, file), idsOf(readFileSync(file, 'utf8'))]));
    const broken: string[] = [];
    for (const file of pages) {
      const from = sitePath(site, file);
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

  it('shows the getting-started page with its Quick start (saved as .tmp/screenshots/getting-started.png)', async () => {
    const { site, BASE } = theSite();
    const page = await site.browser.newPage({ viewport: { width: 1280, height: 900 } });
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
    const { site, BASE } = theSite();
    const page = await site.browser.newPage();
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
