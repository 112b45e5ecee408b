import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';

// Regression: there was no module-level default key, so a @nestjs/throttler app whose ThrottlerGuard subclass
// overrides getTracker had to put a `key` on every policy (and the `key` option stopped the start as unknown).
// The module's `key` is now the key of every policy that names none.

@Controller()
class ItemsController {
  @Get('items')
  @RateLimit({ name: 'items', algorithm: 'fixed-window', limit: 1, window: '1m' })
  items() {
    return 'ok';
  }

  @Get('by-ip')
  @RateLimit({ name: 'by-ip', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' })
  byIp() {
    return 'ok';
  }
}

async function start(options: RateLimitModuleOptions): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [ItemsController],
  }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  await app.init();
  return app;
}

const apiKey = (ctx: Parameters<Extract<RateLimitModuleOptions['key'], (...args: never[]) => unknown>>[0]) =>
  ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-api-key'];

describe('regression: no module-level default key', () => {
  let app: INestApplication;
  afterEach(async () => app?.close());

  it("keys every policy that names none by the module's key (a getTracker in one line)", async () => {
    app = await start({
      key: apiKey,
      defaults: [{ name: 'per-tracker', algorithm: 'fixed-window', limit: 100, window: '1m' }],
    });
    const get = (path: string, key: string) => request(app.getHttpServer()).get(path).set('x-api-key', key);
    expect([(await get('/items', 'a')).status, (await get('/items', 'a')).status]).toEqual([200, 429]);
    // Another API key from the same address has its own count: the policy is keyed by the tracker, not the IP.
    expect((await get('/items', 'b')).status).toBe(200);
    // A policy's own key wins: both API keys share the address.
    expect([(await get('/by-ip', 'a')).status, (await get('/by-ip', 'b')).status]).toEqual([200, 429]);
    // The module's defaults take the module's key too.
    const policy = (await get('/items', 'c')).headers['ratelimit-policy'];
    expect(policy).toContain('"per-tracker"');
  });

  it('refuses a key that is not a key, naming the option', async () => {
    await expect(start({ key: 'api-key' as never })).rejects.toThrow(
      /option "key" must be 'ip', 'user' or a function of the request/,
    );
  });
});
