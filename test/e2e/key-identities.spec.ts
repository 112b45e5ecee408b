import { Controller, type ExecutionContext, Get, UseGuards } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitGuard, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { OptionalUserGuard } from '../support/auth-guards.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

// Issue 19, item 2: a key function could not compose the client IP as 'ip' keys see it (trusted proxies, the
// IPv6 prefix), so "per IP per tenant" meant re-implementing proxy trust. Key functions now get the identities.

interface Req {
  headers: Record<string, string | undefined>;
  user?: { id: string };
}

const tenantOf = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<Req>().headers['x-tenant'];

@Controller()
@UseGuards(OptionalUserGuard, RateLimitGuard)
class IdentitiesController {
  @Get('per-ip-per-tenant')
  @RateLimit({
    name: 'ip-tenant',
    algorithm: 'fixed-window',
    limit: 2,
    window: '1m',
    key: (ctx, id) => `${tenantOf(ctx)}|${id.ip}`,
  })
  perIpPerTenant() {
    return 'ok';
  }

  @Get('by-ip')
  @RateLimit({ name: 'by-ip', algorithm: 'fixed-window', limit: 100, window: '1m', key: 'ip' })
  byIp() {
    return 'ok';
  }

  @Get('who')
  @RateLimit({
    name: 'who',
    algorithm: 'fixed-window',
    limit: 100,
    window: '1m',
    key: (_, id) => `user=${id.user ?? 'none'}`,
  })
  who() {
    return 'ok';
  }

  // Issue 43's lighter request path once passed the identities as a class instance, its getters on the
  // prototype: a spread of them read nothing, and every client shared one key.
  @Get('spread')
  @RateLimit({
    name: 'spread',
    algorithm: 'fixed-window',
    limit: 100,
    window: '1m',
    key: (_, id) => `spread=${Object.keys({ ...id }).join(',')}|${{ ...id }.user ?? 'none'}`,
  })
  spread() {
    return 'ok';
  }

  @Get('one-argument')
  @RateLimit({ name: 'one-argument', algorithm: 'fixed-window', limit: 1, window: '1m', key: tenantOf })
  oneArgument() {
    return 'ok';
  }
}

describe.each(ADAPTERS)('key functions compose the identities the module computes (%s)', (adapter) => {
  it("id.ip is the address 'ip' keys see: a trusted proxy's X-Forwarded-For, IPv6 by its /64", async () => {
    const { app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({ trustProxy: ['127.0.0.1', '::1', '::ffff:127.0.0.1'], global: false })],
      controllers: [IdentitiesController],
    });
    const limits = app.get(RateLimitService);
    const get = (tenant: string, forwarded: string) =>
      request(app.getHttpServer()).get('/per-ip-per-tenant').set('x-tenant', tenant).set('x-forwarded-for', forwarded);
    // Two addresses of one /64: one budget for the tenant; another tenant has its own.
    expect((await get('acme', '2001:db8:1:2::10')).status).toBe(200);
    expect((await get('acme', '2001:db8:1:2::99')).status).toBe(200);
    expect((await get('acme', '2001:db8:1:2::aa')).status).toBe(429);
    expect((await get('globex', '2001:db8:1:2::10')).status).toBe(200);
    expect((await get('acme', '203.0.113.7')).status).toBe(200);
    // the same address as an 'ip' key of the same request
    expect((await request(app.getHttpServer()).get('/by-ip').set('x-forwarded-for', '2001:db8:1:2::10')).status).toBe(
      200,
    );
    expect((await limits.peek('by-ip', 'ip:2001:db8:1:2::/64')).remaining).toBe(99);
    expect((await limits.peek('ip-tenant', 'acme|2001:db8:1:2::/64')).remaining).toBe(0);
    expect((await limits.peek('ip-tenant', 'globex|2001:db8:1:2::/64')).remaining).toBe(1);
    expect((await limits.peek('ip-tenant', 'acme|203.0.113.7')).remaining).toBe(1);
    await app.close();
  });

  it("id.user is the user as 'user' keys see it, undefined when there is none; one-argument functions work", async () => {
    const { app } = await createApp(adapter, {
      imports: [
        RateLimitModule.forRoot({ user: (ctx) => ctx.switchToHttp().getRequest<Req>().user?.id, global: false }),
      ],
      controllers: [IdentitiesController],
    });
    const limits = app.get(RateLimitService);
    expect((await request(app.getHttpServer()).get('/who').set('x-user', 'ada')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/who')).status).toBe(200);
    expect((await limits.peek('who', 'user=ada')).remaining).toBe(99);
    expect((await limits.peek('who', 'user=none')).remaining).toBe(99);
    // the identities are own, enumerable properties, as an object literal's: a spread keeps them
    expect((await request(app.getHttpServer()).get('/spread').set('x-user', 'ada')).status).toBe(200);
    expect((await limits.peek('spread', 'spread=ip,user|ada')).remaining).toBe(99);
    expect((await request(app.getHttpServer()).get('/one-argument').set('x-tenant', 't1')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/one-argument').set('x-tenant', 't1')).status).toBe(429);
    await app.close();
  });
});
