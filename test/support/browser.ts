import { existsSync } from 'node:fs';

import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium, which the browser tests drive (installed by .ci/run when missing). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Launches Debian's chromium headless for a browser test. Fails, never skips, when it is not installed: a
 * browser test that quietly does not run would let a broken site through.
 * @example const browser = await launchChromium(); try { … } finally { await browser.close(); }
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests need Debian's chromium (apt-get install chromium; .ci/run installs it)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
