// Removes the docs site that jest-site.mjs built for the run.
import { rmSync } from 'node:fs';

export default function teardown() {
  if (process.env.DOCS_SITE_DIR) rmSync(process.env.DOCS_SITE_DIR, { recursive: true, force: true });
  delete process.env.DOCS_SITE_DIR;
}
