import { Controller, Get } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import { ADAPTERS, createApp, statusesOf } from '../support/nest-app.js';

// Issue 19, item 1: ported from @nestjs/throttler (`ttl: 60000, limit: 10`), `defaults` was one budget for every
// route where throttler gives each route its own: 6 calls to /auth/me and 4 to /auth/other, and the 5th /other
// got 429. `scope: 'route'` keeps a policy's state per route and key.

const KEY = 'ip:127.0.0.1';

@Controller('auth')
class AuthController {
  @Get('me')
  me() {
    return 'me';
  }

  @Get('other')
  other() {
    return 'other';
  }

  @Get('strict')
  @RateLimit({ name: 'default', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip', scope: 'route' })
  strict() {
    return 'strict';
  }
}

@Controller('shared')
class SharedController {
  @Get('a')
  @RateLimit({ name: 'together', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' })
  a() {
    return 'a';
  }

  @Get('b')
  @RateLimit({ name: 'together', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' })
  b() {
    return 'b';
  }
}

const DEFAULTS = [
  {
    name: 'default',
    algorithm: 'fixed-window' as const,
    limit: 10,
    window: 60_000,
    key: 'ip' as const,
    scope: 'route' as const,
  },
];

describe.each(ADAPTERS)("scope: 'route' (%s)", (adapter) => {
  async function start() {
    const { app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({ defaults: DEFAULTS })],
      controllers: [AuthController, SharedController],
    });
    const statuses = (path: string, n: number) => statusesOf(app, path, n);
    return { app, statuses, limits: app.get(RateLimitService) };
  }

  it('gives each route of a route-scoped default its own budget, as throttler does', async () => {
    const { app, statuses } = await start();
    expect(await statuses('/auth/me', 6)).toEqual(Array(6).fill(200));
    expect(await statuses('/auth/other', 10)).toEqual(Array(10).fill(200));
    expect(await statuses('/auth/other', 1)).toEqual([429]);
    expect(await statuses('/auth/me', 5)).toEqual([200, 200, 200, 200, 429]);
    await app.close();
  });

  it('a route that replaces the default by name keeps a budget of its own, named as the policy', async () => {
    const { app } = await start();
    const server = app.getHttpServer();
    expect((await request(server).get('/auth/strict')).status).toBe(200);
    expect((await request(server).get('/auth/strict')).status).toBe(200);
    const denied = await request(server).get('/auth/strict');
    expect(denied.status).toBe(429);
    expect(denied.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/);
    expect(denied.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
    expect((await request(server).get('/auth/me')).status).toBe(200);
    await app.close();
  });

  it("'shared' (the default) stays one budget for every route of the policy", async () => {
    const { app, statuses } = await start();
    expect(await statuses('/shared/a', 2)).toEqual([200, 200]);
    expect(await statuses('/shared/b', 2)).toEqual([200, 429]);
    await app.close();
  });

  it("RateLimitService names a route's budget as 'name@Class.method', and refuses the bare name", async () => {
    const { app, statuses, limits } = await start();
    expect(await statuses('/auth/me', 10)).toEqual(Array(10).fill(200));
    expect((await limits.peek('default@AuthController.me', KEY)).remaining).toBe(0);
    expect((await limits.peek('default@AuthController.other', KEY)).remaining).toBe(10);
    await limits.reset('default@AuthController.me', KEY);
    expect(await statuses('/auth/me', 1)).toEqual([200]);
    await expect(limits.peek('default', KEY)).rejects.toThrow(
      /"default".*field "scope".*each route has its own budget; name the route's, as 'name@Class.method'/s,
    );
    await expect(limits.peek(DEFAULTS[0] as never, KEY)).rejects.toThrow(/field "scope"/);
    await app.close();
  });

  it('refuses a scope it does not know, at start', async () => {
    await expect(
      createApp(adapter, {
        imports: [
          RateLimitModule.forRoot({ defaults: [{ ...(DEFAULTS[0] as RateLimitPolicy), scope: 'global' as never }] }),
        ],
        controllers: [AuthController],
      }),
    ).rejects.toThrow(/field "scope": must be 'shared' or 'route', got "global"/);
  });
});
