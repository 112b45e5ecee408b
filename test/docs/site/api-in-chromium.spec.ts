import { htmlFiles, problemsLoading, servedSite, sitePath } from '../../support/docs-site.js';

// The pages of the generated API reference (api/) but the classes and interfaces of the root entry point
// (api-classes-in-chromium.spec.ts), loaded in Debian's chromium from the built site: no console error, no page
// error, no failed request. The guide's pages: guide-in-chromium.spec.ts.

const served = servedSite();

it('loads the API reference (entry points, functions, types) in chromium without an error or a failed request', async () => {
  const site = served();
  const classes = [`${site.base}api/nest-rate-limit/classes/`, `${site.base}api/nest-rate-limit/interfaces/`];
  const pages = htmlFiles(site.outDir).filter((file) => {
    const path = sitePath(site, file);
    return path.startsWith(`${site.base}api/`) && !classes.some((folder) => path.startsWith(folder));
  });
  expect(await problemsLoading(site, pages)).toEqual([]);
  expect(pages.length).toBeGreaterThan(20);
}, 300_000);
