import { createRequire } from 'node:module';
import { dirname } from 'node:path';

import { jest } from '@jest/globals';

/**
 * Lets Jest load Mercurius on Node 20. Mercurius requires @fastify/static, which requires content-disposition 3,
 * an ES module: Node >= 20.19 can `require()` it, but Jest's CommonJS loader can only from Node 24.9. So that
 * one module is imported as the ES module it is and handed to `require` as a mock of itself. Import this file
 * before `@nestjs/mercurius` is loaded, and load that dynamically (Jest links a file's static imports, and
 * requires the CommonJS ones, before it runs any of them).
 */
const resolve = createRequire(import.meta.url).resolve;
const contentDisposition = resolve('content-disposition', { paths: [dirname(resolve('@fastify/static'))] });
const esm = (await import(contentDisposition)) as object;
// Through an alias: ts-jest hoists `jest.mock(...)` calls above the lines that compute their arguments.
const mocker = jest;
mocker.mock(contentDisposition, () => esm);
