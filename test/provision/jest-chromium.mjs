// Jest's global setup for test/docs, whose browser tests drive chromium (test/support/browser.ts).
import { provisionTools } from './provision.mjs';

export default function setup() {
  process.env.CHROMIUM_PATH = provisionTools(['chromium']).chromium;
}
