import { mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import type { Page } from 'playwright-core';

import { htmlFiles, servedSite } from '../../support/docs-site.js';

// The docs site's front door, as a visitor from the registry meets it: built as the Pages deployment builds it
// (config.mts's own base, no DOCS_BASE; test/provision/jest-site.mjs builds it once for the run), served, and
// read in Debian's chromium. The home page answers "what is it, how do I install it, why not throttler" in a
// minute; every page's navigation leads to the repository, the registry, the changelog and the version;
// troubleshooting is in the sidebar; the API reference has its own tree.

const ROOT = join(import.meta.dirname, '..', '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; homepage: string };
/** The deployment's base: the path of package.json's "homepage". */
const BASE = new URL(pkg.homepage).pathname;
const REPOSITORY = 'https://github.com/nest-rate-limit/nest-rate-limit';
const SCREENSHOTS = join(ROOT, '.tmp', 'screenshots');

const served = servedSite();

async function open(path: string, width = 1280): Promise<Page> {
  const site = served();
  expect(site.base).toBe(BASE);
  const page = await site.browser.newPage({ viewport: { width, height: 900 } });
  await page.goto(`${site.url}${BASE}${path}`, { waitUntil: 'networkidle' });
  return page;
}

describe('the docs site, as the Pages deployment builds it', () => {
  it('shows on its home page an install line, code, and why to choose it over @nestjs/throttler, with numbers', async () => {
    const page = await open('index.html');
    try {
      const content = page.locator('.VPHome .vp-doc');
      await expect(content.locator('div[class*="language-bash"]').first().textContent()).resolves.toContain(
        'npm install nest-rate-limit',
      );
      await expect(content.locator('div[class*="language-ts"]').first().textContent()).resolves.toContain(
        '@RateLimit({',
      );
      await expect(content.locator('h2#why-not-nestjs-throttler').textContent()).resolves.toContain(
        '@nestjs/throttler',
      );
      const table = (await content.locator('table').first().textContent()) ?? '';
      expect(table).toMatch(/nest-rate-limit[\s\S]*@nestjs\/throttler/);
      expect(table.match(/\d[\d,]*/g)?.length ?? 0).toBeGreaterThanOrEqual(8);
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, 'home.png'), fullPage: true });
    } finally {
      await page.close();
    }
  }, 120_000);

  // The home page's numbers are measured ones: each is in the bench's results (a new run that changes them makes
  // this fail until the home page says the new ones).
  it("quotes on its home page only numbers of the bench's results", () => {
    const home = readFileSync(join(ROOT, 'docs', 'index.md'), 'utf8');
    const table = home.slice(home.indexOf('| Measured'), home.indexOf('\n\n', home.indexOf('| Measured')));
    const results = readFileSync(join(ROOT, 'bench', 'RESULTS.md'), 'utf8');
    const cells = table
      .split('\n')
      .slice(2)
      .flatMap((row) => row.split('|').slice(2, 4))
      .map((cell) => /[\d,]+/.exec(cell)?.[0] ?? '');
    expect(cells.length).toBeGreaterThanOrEqual(10);
    expect(cells.filter((number) => !new RegExp(`[|,\\s]${number}[\\s|]`).test(results))).toEqual([]);
  });

  it("gives every page's navigation the repository, the registry page, the changelog and the version", () => {
    const { outDir } = served();
    const missing = htmlFiles(outDir).flatMap((file) => {
      const html = readFileSync(file, 'utf8');
      const nav = html.slice(html.indexOf('class="VPNav"'), html.indexOf('class="VPContent'));
      const wanted = [
        `href="${REPOSITORY}"`,
        'href="https://www.npmjs.com/package/nest-rate-limit"',
        `href="${REPOSITORY}/blob/main/CHANGELOG.md"`,
        `v${pkg.version}`,
      ];
      return wanted.filter((text) => !nav.includes(text)).map((text) => `${relative(outDir, file)}: ${text}`);
    });
    expect(missing).toEqual([]);
    expect(htmlFiles(outDir).length).toBeGreaterThan(40);
  });

  it('reaches the troubleshooting page from the sidebar of the guide', async () => {
    const page = await open('getting-started.html');
    try {
      const link = page.locator(`.VPSidebar a[href="${BASE}troubleshooting.html"]`);
      await expect(link.textContent()).resolves.toContain('Troubleshooting');
      await link.click();
      await page.waitForURL(`**${BASE}troubleshooting.html`);
      // The router changes the URL before it renders the page: wait for the page's own heading (bounded by the
      // locator's timeout), not the heading of the page being left.
      await page.locator('.vp-doc h1', { hasText: /Troubleshooting/i }).waitFor({ timeout: 10_000 });
      await expect(page.locator('.vp-doc h1').textContent()).resolves.toMatch(/Troubleshooting/i);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('gives the API reference a tree of its own, one-line summaries, and exceptions without inherited members', async () => {
    const page = await open('api/index.html');
    try {
      const sidebar = (await page.locator('.VPSidebar').textContent()) ?? '';
      expect(sidebar).toContain('nest-rate-limit/testing');
      expect(sidebar).not.toContain('Getting started');
      const summaries = await page.locator('.vp-doc table td:nth-child(2)').allTextContents();
      expect(summaries.length).toBe(5);
      expect(summaries.filter((summary) => summary.trim() === '-' || summary.length > 200)).toEqual([]);
    } finally {
      await page.close();
    }
    const { outDir } = served();
    const index = readFileSync(join(outDir, 'api', 'nest-rate-limit', 'index.html'), 'utf8');
    const cells = [...index.matchAll(/<td>(?:(?!<\/td>)[\s\S])*?<\/td>\s*<td>([\s\S]*?)<\/td>/g)].map((m) =>
      (m[1] ?? '').replace(/<[^>]+>/g, ''),
    );
    expect(cells.length).toBeGreaterThan(40);
    expect(cells.filter((cell) => cell.length > 200)).toEqual([]);
    const exception = readFileSync(
      join(outDir, 'api', 'nest-rate-limit', 'classes', 'RateLimitExceededException.html'),
      'utf8',
    );
    expect(exception).toContain('id="problem"');
    for (const inherited of ['getResponse', 'stack', 'initName', 'captureStackTrace']) {
      expect([inherited, exception.includes(`id="${inherited.toLowerCase()}`)]).toEqual([inherited, false]);
    }
  }, 120_000);

  it('shows the playground counts as text', async () => {
    const page = await open('playground.html', 390);
    try {
      await page.locator('[data-side="a"] [data-count="admitted"]').waitFor();
      const counts = await page.locator('[data-count="admitted"], [data-count="denied"]').allTextContents();
      expect(counts).toHaveLength(4);
      for (const count of counts) expect(count.trim()).toMatch(/^\d+$/);
    } finally {
      await page.close();
    }
  }, 120_000);
});
