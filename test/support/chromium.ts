import { existsSync } from 'node:fs';

import { type Browser, chromium } from 'playwright-core';

/** Debian's chromium, which the browser tests of the docs site drive (`.ci/run` installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Starts Debian's chromium headless, without the background traffic it would make on its own; throws (so the
 * test fails, never skips) when it is not installed.
 * @example const browser = await launchChromium(); const page = await browser.newPage();
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: the browser tests need Debian's chromium (apt-get install chromium)`);
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
