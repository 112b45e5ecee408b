import { createRequire } from 'node:module';

import { jest } from '@jest/globals';

/**
 * Loads @nestjs/throttler (CommonJS) under Jest on Nest 12 (ES modules only). Node >= 20.19 can `require()`
 * @nestjs/common and @nestjs/core, but Jest's CommonJS loader can only from Node 24.9 (as in
 * mercurius-under-jest.ts). So both are imported as the ES modules they are and handed to throttler's `require`
 * as mocks of themselves: throttler then shares the app's Nest (its Reflector, its decorators' metadata) rather
 * than a copy of its own. Import `throttler` from here; nothing else may load @nestjs/throttler first.
 */
const resolve = createRequire(import.meta.url).resolve;
const throttlerEntry = resolve('@nestjs/throttler');
// Through an alias: ts-jest hoists `jest.mock(...)` calls above the lines that compute their arguments.
const mocker = jest;
for (const name of ['@nestjs/common', '@nestjs/core']) {
  const path = resolve(name, { paths: [throttlerEntry] });
  const esm = (await import(path)) as object;
  mocker.mock(path, () => esm);
}

export const throttler = (await import('@nestjs/throttler')) as typeof import('@nestjs/throttler');
