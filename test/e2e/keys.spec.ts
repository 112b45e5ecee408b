import { Controller, Get, type INestApplication, Post, UseGuards } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { type TrustProxy } from '../../lib/nest/rate-limit.options.js';
import { RequiredUserGuard } from '../support/auth-guards.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

interface Req {
  headers: Record<string, string | undefined>;
  body?: { username?: string };
  user?: { id: string };
}

@Controller()
class KeysController {
  @Get('by-ip')
  @RateLimit({ name: 'by-ip', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' })
  byIp() {
    return 'ok';
  }

  @Get('anonymous')
  @RateLimit({ name: 'anon', algorithm: 'fixed-window', limit: 1, window: '1m' })
  anonymous() {
    return 'ok';
  }

  @Get('tenant')
  @RateLimit({
    name: 'tenant',
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    key: async (ctx) => ctx.switchToHttp().getRequest<Req>().headers['x-tenant'],
  })
  tenant() {
    return 'ok';
  }

  @Post('auth/login')
  @RateLimit([
    {
      name: 'login-account',
      algorithm: 'sliding-window-log',
      limit: 3,
      window: '15m',
      failMode: 'closed',
      key: (ctx) => {
        const username = ctx.switchToHttp().getRequest<Req>().body?.username;
        return username === undefined ? undefined : `account:${username.toLowerCase()}`;
      },
    },
    { name: 'login-ip', algorithm: 'sliding-window-log', limit: 5, window: '15m', failMode: 'closed', key: 'ip' },
  ])
  login() {
    return 'ok';
  }
}

@Controller('me')
@UseGuards(RequiredUserGuard)
class AuthenticatedController {
  @Get()
  @RateLimit({ name: 'per-user', algorithm: 'fixed-window', limit: 2, window: '1m' })
  me() {
    return 'ok';
  }
}

@Controller('guarded')
@UseGuards(RequiredUserGuard)
class GuardedController {
  @Get()
  @RateLimit([
    { name: 'guarded-ip', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' },
    { name: 'guarded-user', algorithm: 'fixed-window', limit: 1, window: '1m' },
  ])
  get() {
    return 'ok';
  }
}

async function appWith(adapter: (typeof ADAPTERS)[number], trustProxy?: TrustProxy) {
  return createApp(adapter, {
    imports: [RateLimitModule.forRoot({ trustProxy })],
    controllers: [KeysController, AuthenticatedController, GuardedController],
  });
}

describe.each(ADAPTERS)('keys on %s', (adapter) => {
  let app: INestApplication;
  afterEach(() => app.close());
  const get = (path: string, headers: Record<string, string> = {}) =>
    request(app.getHttpServer()).get(path).set(headers);

  it('ignores X-Forwarded-For when no proxy is trusted: forged values mint no fresh identities', async () => {
    ({ app } = await appWith(adapter));
    expect((await get('/by-ip', { 'x-forwarded-for': '198.51.100.1' })).status).toBe(200);
    for (let i = 2; i < 20; i++) {
      expect((await get('/by-ip', { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(429);
    }
  });

  it('believes one trusted hop and keys by the address it reports', async () => {
    ({ app } = await appWith(adapter, 1));
    expect((await get('/by-ip', { 'x-forwarded-for': '203.0.113.5' })).status).toBe(200);
    // A client's own forged entry comes before the one the proxy appended: it is not believed.
    expect((await get('/by-ip', { 'x-forwarded-for': '198.51.100.77, 203.0.113.5' })).status).toBe(429);
    expect((await get('/by-ip', { 'x-forwarded-for': '203.0.113.6' })).status).toBe(200);
  });

  it('keys IPv6 clients by /64, and IPv4-mapped IPv6 as IPv4', async () => {
    ({ app } = await appWith(adapter, 'loopback'));
    expect((await get('/by-ip', { 'x-forwarded-for': '2001:db8:1:2::1' })).status).toBe(200);
    expect((await get('/by-ip', { 'x-forwarded-for': '2001:db8:1:2:ffff:ffff:ffff:9' })).status).toBe(429);
    expect((await get('/by-ip', { 'x-forwarded-for': '2001:db8:1:3::1' })).status).toBe(200);
    expect((await get('/by-ip', { 'x-forwarded-for': '::ffff:10.0.0.1' })).status).toBe(200);
    expect((await get('/by-ip', { 'x-forwarded-for': '10.0.0.1' })).status).toBe(429);
  });

  it('keys user policies by the user even when authentication is a controller-level guard', async () => {
    ({ app } = await appWith(adapter));
    expect((await get('/me', { 'x-user': 'alice' })).status).toBe(200);
    expect((await get('/me', { 'x-user': 'alice' })).status).toBe(200);
    const third = await get('/me', { 'x-user': 'alice' });
    expect(third.status).toBe(429);
    expect(third.headers['ratelimit']).toBe('"per-user";r=0;t=40'); // the fake clock starts 20 s into a minute
    // same IP, another user: a separate limit
    expect((await get('/me', { 'x-user': 'bob' })).status).toBe(200);
    // rejected by authentication before any decision: not counted
    expect((await get('/me')).status).toBe(401);
  });

  it('counts requests that authentication rejects against the IP, and gives them back when the user denies', async () => {
    ({ app } = await appWith(adapter));
    const first = await get('/guarded', { 'x-user': 'alice' });
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit']).toBe('"guarded-ip";r=2;t=40, "guarded-user";r=0;t=40');
    // alice's own limit denies: the IP unit the guard took before authentication is given back
    const denied = await get('/guarded', { 'x-user': 'alice' });
    expect(denied.status).toBe(429);
    expect(denied.body.policy).toBe('guarded-user');
    expect(denied.headers['ratelimit']).toBe('"guarded-ip";r=2;t=40, "guarded-user";r=0;t=40');
    // unauthenticated guessing is limited per IP before the auth guard runs
    expect((await get('/guarded', { 'x-user-typo': 'x' })).status).toBe(401);
    expect((await get('/guarded')).status).toBe(401);
    const limited = await get('/guarded');
    expect(limited.status).toBe(429);
    expect(limited.body.policy).toBe('guarded-ip');
    expect((await get('/guarded', { 'x-user': 'bob' })).status).toBe(429);
  });

  it('falls back to the client IP for user policies without a user', async () => {
    ({ app } = await appWith(adapter, 'loopback'));
    expect((await get('/anonymous', { 'x-forwarded-for': '192.0.2.1' })).status).toBe(200);
    expect((await get('/anonymous', { 'x-forwarded-for': '192.0.2.1' })).status).toBe(429);
    expect((await get('/anonymous', { 'x-forwarded-for': '192.0.2.2' })).status).toBe(200);
  });

  it('skips a policy whose key function returns undefined', async () => {
    ({ app } = await appWith(adapter));
    for (let i = 0; i < 3; i++) {
      const res = await get('/tenant');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
    }
    expect((await get('/tenant', { 'x-tenant': 't1' })).status).toBe(200);
    expect((await get('/tenant', { 'x-tenant': 't1' })).status).toBe(429);
  });

  it('limits login per target account and per IP at once', async () => {
    ({ app } = await appWith(adapter, 'loopback'));
    const login = (username: string, ip = '192.0.2.10') =>
      request(app.getHttpServer()).post('/auth/login').set('x-forwarded-for', ip).send({ username, password: 'x' });
    for (let i = 0; i < 3; i++) expect((await login('Alice')).status).toBe(201);
    const account = await login('alice');
    expect(account.status).toBe(429);
    expect(account.body.policy).toBe('login-account');
    // the denied attempt consumed nothing from the IP's 5: two more accounts fit, the next does not
    expect((await login('bob')).status).toBe(201);
    expect((await login('carol')).status).toBe(201);
    const ip = await login('dave');
    expect(ip.status).toBe(429);
    expect(ip.body.policy).toBe('login-ip');
    // spread over accounts from another IP: its own IP budget, and dave was never charged
    expect((await login('dave', '192.0.2.11')).status).toBe(201);
    // the account is limited from every IP
    expect((await login('alice', '192.0.2.12')).status).toBe(429);
  });
});
