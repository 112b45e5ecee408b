import { htmlFiles, problemsLoading, servedSite, sitePath } from '../../support/docs-site.js';

// Every page of the guide (all but the API reference, api-in-chromium.spec.ts), loaded in Debian's chromium
// from the built site: no console error, no page error, no failed request.

const served = servedSite();

it('loads every page of the guide in chromium without a console error, a page error or a failed request', async () => {
  const site = served();
  const pages = htmlFiles(site.outDir).filter((file) => !sitePath(site, file).startsWith(`${site.base}api/`));
  expect(await problemsLoading(site, pages)).toEqual([]);
  expect(pages.length).toBeGreaterThan(30);
}, 300_000);
