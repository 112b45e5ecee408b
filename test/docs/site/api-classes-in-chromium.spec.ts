import { htmlFiles, problemsLoading, servedSite, sitePath } from '../../support/docs-site.js';

// The pages of the root entry point's classes and interfaces in the generated API reference, loaded in Debian's
// chromium from the built site: no console error, no page error, no failed request. The rest of the reference:
// api-in-chromium.spec.ts.

const served = servedSite();

it("loads the API reference's classes and interfaces in chromium without an error or a failed request", async () => {
  const site = served();
  const classes = [`${site.base}api/nest-rate-limit/classes/`, `${site.base}api/nest-rate-limit/interfaces/`];
  const pages = htmlFiles(site.outDir).filter((file) =>
    classes.some((folder) => sitePath(site, file).startsWith(folder)),
  );
  expect(await problemsLoading(site, pages)).toEqual([]);
  expect(pages.length).toBeGreaterThan(25);
}, 300_000);
