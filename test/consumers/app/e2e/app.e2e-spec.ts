// The e2e test of the consumer app, as `nest new` sets one up (Jest with ts-jest), run by the consumers whose
// e2e/ holds a Jest configuration: Nest 11 in Jest's CommonJS runtime, Nest 12 in its ESM mode.
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';

import { AppModule } from '../src/app.module.js';

describe('the app under Jest', () => {
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
});
