import { Controller, Get, type INestApplication, Module, type ModuleMetadata, UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitPolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { OptionalUserGuard, RequiredUserGuard } from '../support/auth-guards.js';
import { CapturingLogger, type LogEntry } from '../support/log-lines.js';
import { TEST_START_MS } from '../support/time.js';

// Regression (issue 18, item 3): a policy declared `key: 'user'` on a route nobody authenticates before the
// limiter fell back to the client IP without a word, so a "per-account" limit was in fact per NAT. The first
// such fallback of each policy on each handler now logs a warning naming both; the default key (no `key`)
// claimed nothing and stays silent, and a deferred policy whose route guard then sets the user never warns.

const perAccount: RateLimitPolicy = {
  name: 'per-account',
  algorithm: 'fixed-window',
  limit: 100,
  window: '1m',
  key: 'user',
};

@Controller('anonymous')
class AnonymousController {
  @Get('first')
  @RateLimit(perAccount)
  first() {
    return 'ok';
  }

  @Get('second')
  @RateLimit(perAccount)
  second() {
    return 'ok';
  }

  @Get('unkeyed')
  @RateLimit({ name: 'unkeyed', algorithm: 'fixed-window', limit: 100, window: '1m' })
  unkeyed() {
    return 'ok';
  }
}

/** Its authentication is a controller guard: the global guard defers `per-account` to the interceptor. */
@Controller('required')
@UseGuards(RequiredUserGuard)
class RequiredAuthController {
  @Get()
  @RateLimit(perAccount)
  get() {
    return 'ok';
  }
}

/** A controller guard that lets anonymous requests through: deferred too, and then there is still no user. */
@Controller('optional')
@UseGuards(OptionalUserGuard)
class OptionalAuthController {
  @Get()
  @RateLimit(perAccount)
  get() {
    return 'ok';
  }
}

/** Authentication as a global guard registered before the limiter's, as docs/keys-and-proxies.md says to. */
@Module({ providers: [{ provide: APP_GUARD, useClass: OptionalUserGuard }] })
class GlobalAuthModule {}

async function start(
  adapter: AdapterName,
  metadata: ModuleMetadata,
): Promise<{ app: INestApplication; warnings: () => LogEntry[] }> {
  const logs = new CapturingLogger();
  const { app } = await createApp(adapter, metadata, new FakeClock(TEST_START_MS), { logger: logs });
  return { app, warnings: () => logs.find('warn', /keyed 'user'/) };
}

describe.each(ADAPTERS)("a 'user' key that falls back to the IP, on %s", (adapter) => {
  let app: INestApplication;
  afterEach(() => app.close());
  const get = (path: string, headers: Record<string, string> = {}) =>
    request(app.getHttpServer()).get(path).set(headers);

  it('warns once per policy and handler, naming both and what to do', async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [AnonymousController],
    }));
    expect((await get('/anonymous/first')).status).toBe(200);
    expect((await get('/anonymous/first')).status).toBe(200);
    expect(warnings()).toHaveLength(1);
    const [warning] = warnings();
    expect(warning?.context).toBe('RateLimit');
    expect(warning?.message).toContain('"per-account"');
    expect(warning?.message).toContain('AnonymousController.first');
    expect(warning?.message).toContain("`key: 'ip'`");
    expect(warning?.message).toContain('RateLimitGuard');
    expect(warning?.message).toContain('`user` option');

    // The same policy on another handler is another claim: one more warning, naming that handler.
    expect((await get('/anonymous/second')).status).toBe(200);
    expect((await get('/anonymous/second')).status).toBe(200);
    expect(warnings().map((w) => w.message.includes('AnonymousController.second'))).toEqual([false, true]);
  });

  it('stays silent for a policy without `key` (its default claimed no per-account limit)', async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [AnonymousController],
    }));
    for (let i = 0; i < 3; i++) expect((await get('/anonymous/unkeyed')).status).toBe(200);
    expect(warnings()).toEqual([]);
  });

  it('stays silent when a guard sets the user before the limiter', async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [GlobalAuthModule, RateLimitModule.forRoot({})],
      controllers: [AnonymousController],
    }));
    for (let i = 0; i < 3; i++) expect((await get('/anonymous/first', { 'x-user': 'alice' })).status).toBe(200);
    expect(warnings()).toEqual([]);
  });

  it('stays silent for a deferred policy whose controller guard then authenticates', async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [RequiredAuthController],
    }));
    for (let i = 0; i < 3; i++) {
      const res = await get('/required', { 'x-user': 'alice' });
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBe(`"per-account";r=${99 - i};t=40`);
    }
    // Refused by the guard: the deferred policy is never decided, so it never fell back either.
    expect((await get('/required')).status).toBe(401);
    expect(warnings()).toEqual([]);
  });

  it('warns once for a deferred policy when the controller guard lets an anonymous request through', async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [OptionalAuthController],
    }));
    expect((await get('/optional', { 'x-user': 'alice' })).status).toBe(200);
    expect(warnings()).toEqual([]);
    expect((await get('/optional')).status).toBe(200);
    expect((await get('/optional')).status).toBe(200);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]?.message).toContain('OptionalAuthController.get');
  });

  it("names the handler, not the module's defaults, for a default declared `key: 'user'`", async () => {
    let warnings: () => LogEntry[];
    ({ app, warnings } = await start(adapter, {
      imports: [RateLimitModule.forRoot({ defaults: [{ ...perAccount, name: 'default-account' }] })],
      controllers: [AnonymousController],
    }));
    await get('/anonymous/unkeyed');
    await get('/anonymous/unkeyed');
    await get('/anonymous/first');
    const messages = warnings().map((w) => w.message);
    expect(messages).toHaveLength(3);
    expect(messages.filter((m) => m.includes('"default-account" on AnonymousController.unkeyed'))).toHaveLength(1);
    expect(messages.filter((m) => m.includes('"default-account" on AnonymousController.first'))).toHaveLength(1);
    expect(messages.filter((m) => m.includes('"per-account" on AnonymousController.first'))).toHaveLength(1);
    expect(messages.some((m) => m.includes('RateLimitModule defaults'))).toBe(false);
  });
});
