import { Controller, Get } from '@nestjs/common';
import { Redis } from 'ioredis';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// Regression: a start that a check stopped (a bad option value, a policy its module cannot run, a handler no
// guard covers) threw with the module's Redis connection (and its feed's subscriber) open. Nest calls no
// shutdown hook when the start fails, so that connection kept the process alive: an app that caught the error
// and logged it hung, and so did a test run (.ci/jest-exits). Option values are now checked before anything
// connects, and a check that fails later closes what the module opened.

let redis: TestRedis;
/** The test's own client: the only one the server should have once a start failed. */
let admin: Redis;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
});
afterAll(async () => {
  await redis?.stop();
});

/** How many clients the server has now (the admin's included). */
async function clients(): Promise<number> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((line) => line.trim() !== '').length;
}

@Controller()
class OpenController {
  @Get('open')
  @RateLimit({ name: 'open', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' })
  open() {
    return 'ok';
  }
}

@Controller()
class LocalLimitController {
  @Get('local')
  @RateLimit({ name: 'local', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip', localLimit: 2 })
  local() {
    return 'ok';
  }
}

/** Starts an app of `controller` on the module with `options` (the test's server unless they name a client). */
const start = (options: RateLimitModuleOptions, controller: new () => unknown) =>
  createApp('express', {
    imports: [RateLimitModule.forRoot({ redis: { url: `redis://127.0.0.1:${redis.port}` }, ...options })],
    controllers: [controller],
  });

describe('regression: a failed start leaves no connection open', () => {
  it('checks a bad option value before it connects: it makes no connection of its own', async () => {
    // The module connects through a duplicate of a client it is given: counted here, on a real ioredis client.
    const given = new Redis({ port: redis.port, lazyConnect: true });
    const made: Redis[] = [];
    const duplicate = given.duplicate.bind(given);
    given.duplicate = (...args: Parameters<Redis['duplicate']>) => {
      const connection = duplicate(...args);
      made.push(connection);
      return connection;
    };
    try {
      await expect(start({ redis: { client: given }, denyCacheMs: -1 }, OpenController)).rejects.toThrow(
        /option "denyCacheMs" must be/,
      );
      expect(made.length).toBe(0);
    } finally {
      for (const connection of [given, ...made]) connection.disconnect();
    }
  });

  it('closes its connection when a declared policy is refused while the module is made', async () => {
    await expect(start({}, LocalLimitController)).rejects.toThrow(/LocalLimitController\.local/);
    await waitFor(async () => (await clients()) === 1, "the module's connections to close");
  });

  it('closes its connection and its feed when a check at init stops the start', async () => {
    // global: false, and no guard of the app's own covers /open: refused at init, naming the handler
    await expect(start({ global: false }, OpenController)).rejects.toThrow(/OpenController\.open/);
    await waitFor(async () => (await clients()) === 1, "the module's connections to close");
  });
});
