import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RateLimitModule } from '../../lib/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { CapturingLogger } from '../support/log-lines.js';

// Regression: during a Redis outage an operator read ioredis' words — "Stream isn't writeable and
// enableOfflineQueue options is false" — with neither the store's address nor what the fail modes were doing;
// and the module's own words came behind a bare "Error: ".

describe('regression: outage logs speak ioredis', () => {
  let redis: TestRedis;
  let app: INestApplication;
  const capture = new CapturingLogger();

  beforeAll(async () => {
    redis = await startRedis();
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { url: `redis://:secret@127.0.0.1:${redis.port}` }, timeout: 100 })],
      controllers: [FailModeController],
    })
      .setLogger(capture)
      .compile();
    app = moduleRef.createNestApplication({ logger: capture });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
    await redis.stop();
  });

  it("says where the store is and what the fail modes do, in the module's words, without the password", async () => {
    expect((await request(app.getHttpServer()).get('/open')).status).toBe(200);
    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    await waitFor(async () => capture.lines.some((l) => l.includes('connection failed')), 'the connection error log');
    expect((await request(app.getHttpServer()).get('/open')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/closed')).status).toBe(503);
    const where = `Redis at 127.0.0.1:${redis.port}`;
    const failures = capture.lines.filter((l) => l.startsWith('error Rate limiter store failure'));
    expect(failures).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`policy open: ${where} .*; fail open: the request is admitted`)),
        expect.stringMatching(
          new RegExp(`policy closed: ${where} .*; fail closed \\(closed\\): the request is refused with 503`),
        ),
      ]),
    );
    expect(capture.lines.filter((l) => l.includes('connection failed'))).toEqual([
      expect.stringContaining(`warn ${where}: connection failed`),
    ]);
    const all = capture.lines.join('\n');
    expect(all).not.toMatch(/Stream isn't writeable|enableOfflineQueue/);
    expect(all).not.toContain('secret');
  });
});
