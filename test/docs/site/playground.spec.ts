import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import type { Page } from 'playwright-core';

import {
  type Configuration,
  DEFAULT_CONFIGURATIONS,
  runConfiguration,
} from '../../../docs/.vitepress/theme/playground/configuration.js';
import { ADMITTED, DENIED } from '../../../packages/simulator/src/panel.js';
import { SIMULATED_ALGORITHMS } from '../../../packages/simulator/src/request.js';
import { servedSite } from '../../support/docs-site.js';

// The playground page of the built docs site, in Debian's chromium: for each drawn algorithm, the chart it draws
// holds the numbers the playground's module (the one the parity test holds to the command line) computes.

const SCREENSHOT = join(process.cwd(), '.tmp', 'screenshots', 'playground.png');

/** What one side of the page drew, read from the DOM of its SVG. */
interface Drawn {
  algorithm: string | null;
  admitted: number;
  denied: number;
  buckets: { startMs: number; endMs: number; admitted: number; denied: number }[];
  /** Bars of each colour, in the buckets. */
  marks: Record<string, number>;
  /** The counts the page shows as text under the form, as read (the chart's own labels are too small to read). */
  shown: { admitted: string; denied: string; busiest: string } | null;
  error: string | null;
}

async function drawnOn(page: Page, side: string): Promise<Drawn> {
  return page.locator(`[data-side="${side}"]`).evaluate((section) => {
    const panel = section.querySelector('svg g.panel');
    const marks: Record<string, number> = {};
    for (const rect of section.querySelectorAll('svg g.bucket rect')) {
      const fill = rect.getAttribute('fill') ?? '';
      marks[fill] = (marks[fill] ?? 0) + 1;
    }
    return {
      algorithm: panel?.getAttribute('data-algorithm') ?? null,
      admitted: Number(panel?.getAttribute('data-admitted')),
      denied: Number(panel?.getAttribute('data-denied')),
      buckets: [...section.querySelectorAll('svg g.bucket')].map((g) => ({
        startMs: Number(g.getAttribute('data-start-ms')),
        endMs: Number(g.getAttribute('data-end-ms')),
        admitted: Number(g.getAttribute('data-admitted')),
        denied: Number(g.getAttribute('data-denied')),
      })),
      marks,
      shown: section.querySelector('.playground-counts')
        ? {
            admitted: section.querySelector('[data-count="admitted"]')?.textContent?.trim() ?? '',
            denied: section.querySelector('[data-count="denied"]')?.textContent?.trim() ?? '',
            busiest: section.querySelector('[data-count="busiest"]')?.textContent?.trim() ?? '',
          }
        : null,
      error: section.querySelector('[role="alert"]')?.textContent ?? null,
    };
  });
}

/** What the playground's module computes for a configuration, in the shape drawnOn reads. */
function expected(configuration: Configuration): Drawn {
  const outcome = runConfiguration(configuration);
  if (!outcome.ok) throw new Error(`the test's configuration is refused: ${outcome.error}`);
  const [r] = outcome.results;
  if (r === undefined) throw new Error('the playground drew nothing');
  const buckets = r.buckets.map((b) => ({ ...b }));
  const count = (key: 'admitted' | 'denied') => buckets.filter((b) => b[key] > 0).length;
  const marks: Record<string, number> = { [ADMITTED]: count('admitted'), [DENIED]: count('denied') };
  for (const colour of [ADMITTED, DENIED]) if (marks[colour] === 0) delete marks[colour];
  const shown = {
    admitted: String(r.admitted),
    denied: String(r.denied),
    busiest: `${r.busiestWindow.units} of ${r.policy.limit} units`,
  };
  return { algorithm: r.policy.algorithm, admitted: r.admitted, denied: r.denied, buckets, marks, shown, error: null };
}

describe('the algorithm playground in chromium (the docs site built under its base path, /nest-rate-limit/)', () => {
  // Built under a base path, as for a deployment under a sub-path, so that a link or asset that ignores it fails
  // (once for the run: test/provision/jest-site.mjs).
  const served = servedSite();
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    const { browser, url, base } = served();
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    page.on('console', (message) => {
      // The site declares no icon, so chromium asks the host's root for /favicon.ico on its own, outside the base
      // path (the lead is told; an icon link in config.mts's head ends it). Any other error counts.
      if (message.location().url === `${url}/favicon.ico`) return;
      if (message.type() === 'error') problems.push(`console error: ${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
    });
    await page.goto(`${url}${base}playground.html`);
  }, 60_000);

  it('opens with both default configurations drawn, and saves a screenshot', async () => {
    await page.locator('[data-side="b"] svg g.panel').waitFor();
    expect(await drawnOn(page, 'a')).toEqual(expected(DEFAULT_CONFIGURATIONS[0]));
    expect(await drawnOn(page, 'b')).toEqual(expected(DEFAULT_CONFIGURATIONS[1]));
    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(problems).toEqual([]);
  });

  it.each(SIMULATED_ALGORITHMS)('draws %s as configured, on either side', async (algorithm) => {
    // A: the default traffic (the boundary attack) with this algorithm; B: this algorithm on a ramp to 3 x 10.
    const a: Configuration = { ...DEFAULT_CONFIGURATIONS[0], algorithm };
    const b: Configuration = { ...DEFAULT_CONFIGURATIONS[1], algorithm, limit: '10', traffic: 'ramp', rate: '30' };
    await page.selectOption('[data-side="a"] select[data-field="algorithm"]', algorithm);
    await page.selectOption('[data-side="b"] select[data-field="algorithm"]', algorithm);
    await page.selectOption('[data-side="b"] select[data-field="traffic"]', 'ramp');
    await page.fill('[data-side="b"] input[data-field="limit"]', '10');
    await page.fill('[data-side="b"] input[data-field="rate"]', '30');
    for (const side of ['a', 'b']) {
      await page.locator(`[data-side="${side}"] svg g.panel[data-algorithm="${algorithm}"]`).waitFor();
    }
    const drawnA = await drawnOn(page, 'a');
    const drawnB = await drawnOn(page, 'b');
    expect(drawnA).toEqual(expected(a));
    expect(drawnB).toEqual(expected(b));
    // Each side draws bars of both kinds (the fixed window admits the whole boundary attack: only green there).
    expect(drawnB.marks[DENIED]).toBeGreaterThan(0);
    expect(drawnA.marks[ADMITTED]).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('draws timestamps typed into the page, costs included', async () => {
    const timestamps = '0, 10, 20, 990, 1000, {"atMs": 1500, "cost": 2}, 1999, 2000';
    const b: Configuration = {
      ...DEFAULT_CONFIGURATIONS[1],
      algorithm: 'sliding-window-log',
      limit: '3',
      window: '1s',
      traffic: 'timestamps',
      timestamps,
    };
    await page.selectOption('[data-side="b"] select[data-field="algorithm"]', 'sliding-window-log');
    await page.fill('[data-side="b"] input[data-field="limit"]', '3');
    await page.fill('[data-side="b"] input[data-field="window"]', '1s');
    await page.selectOption('[data-side="b"] select[data-field="traffic"]', 'timestamps');
    await page.fill('[data-side="b"] textarea[data-field="timestamps"]', timestamps);
    await page.locator('[data-side="b"] svg g.panel[data-algorithm="sliding-window-log"]').waitFor();
    const drawn = await drawnOn(page, 'b');
    expect(drawn).toEqual(expected(b));
    expect([drawn.admitted, drawn.denied]).toEqual([6, 2]);
    expect(problems).toEqual([]);
  });

  it('says what is wrong with a field instead of a chart', async () => {
    await page.fill('[data-side="a"] input[data-field="window"]', '1x');
    await expect(page.locator('[data-side="a"] [role="alert"]').textContent()).resolves.toMatch(
      /^Window must be a whole number of ms >= 1 or a duration like '500ms'/,
    );
    expect(await page.locator('[data-side="a"] svg').count()).toBe(0);
    await page.fill('[data-side="a"] input[data-field="window"]', '1m');
    await page.locator('[data-side="a"] svg g.panel').waitFor();
    expect(problems).toEqual([]);
  });
  it('is usable on a 390 px phone: no sideways scroll, fields wide enough to type in, counts in readable text', async () => {
    const { browser, url, base } = served();
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    try {
      await phone.goto(`${url}${base}playground.html`);
      await phone.locator('[data-side="b"] svg g.panel').waitFor();
      // Run in the page, where the DOM is (this project compiles without the DOM's types).
      const layout = await phone.evaluate(`(() => {
        const fields = [...document.querySelectorAll('.playground-form input, .playground-form select')];
        const counts = [...document.querySelectorAll('[data-count]')];
        const select = getComputedStyle(document.querySelector('.playground-form select'));
        return {
          pageWidth: document.documentElement.scrollWidth,
          narrowFields: fields
            .map((field) => ({ field: field.dataset.field, rect: field.getBoundingClientRect() }))
            .filter(({ rect }) => rect.width < 150 || rect.right > 390)
            .map(({ field, rect }) => field + ': ' + Math.round(rect.left) + '-' + Math.round(rect.right) + ' px'),
          smallCounts: counts.filter((count) => parseFloat(getComputedStyle(count).fontSize) < 14).length,
          counts: counts.length,
          selectShowsItOpens: select.appearance !== 'none' || select.backgroundImage.includes('svg'),
        };
      })()`);
      expect(layout).toEqual({ pageWidth: 390, narrowFields: [], smallCounts: 0, counts: 6, selectShowsItOpens: true });
      await phone.screenshot({ path: join(SCREENSHOT, '..', 'playground-390.png'), fullPage: true });
    } finally {
      await phone.close();
    }
  });
});
