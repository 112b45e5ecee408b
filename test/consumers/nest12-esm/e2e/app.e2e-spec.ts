// The e2e test of a Nest 12 app (ES modules) under Jest's ESM mode (ts-jest, --experimental-vm-modules): Jest
// resolves the package's `import` condition, the ES module build.
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';

import { AppModule } from '../src/app.module.js';

describe('the app under Jest (ESM)', () => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(() => app.close());

  it('limits a route', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${base}/hello`)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('loads the ES module build', async () => {
    expect(import.meta.resolve('nest-rate-limit')).toMatch(/nest-rate-limit\/dist\/index\.js$/);
  });
});
