import { existsSync, readFileSync } from 'node:fs';

import { chromium, type Browser } from 'playwright-core';

/**
 * How the browser tests (and ops/grafana/preview.mjs) start Debian's chromium, installed by the test run's
 * provisioning when missing (test/provision/): headless, and without the background connections this
 * machine's closed network refuses.
 */
const LAUNCH = JSON.parse(readFileSync(new URL('chromium.json', import.meta.url), 'utf8')) as {
  executablePath: string;
  args: string[];
};

/** Debian's chromium, or the chromium the provisioning found on the PATH, which the browser tests drive. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? LAUNCH.executablePath;

/**
 * Launches Debian's chromium headless for a browser test. Fails, never skips, when it is not installed: a
 * browser test that quietly does not run would let a broken site through.
 * @example const browser = await launchChromium(); try { … } finally { await browser.close(); }
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests need Debian's chromium (apt-get install chromium; npm test installs it as root on Debian)`,
    );
  }
  return chromium.launch({ ...LAUNCH, executablePath: CHROMIUM });
}
