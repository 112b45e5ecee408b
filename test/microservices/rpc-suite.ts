import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';

import { RateLimit, RateLimitService, type RateLimitModuleOptions } from '../../lib/index.js';
import { RateLimitStoreTimeoutError } from '../../lib/stores/store-timeout.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import {
  emit,
  type RpcApp,
  send,
  sendAll,
  startRpcApp,
  tenantKey,
  type TransportName,
  untilProcessed,
} from './fixtures.js';

const TIMEOUT_MS = 100;

/** A denial as the client's observable receives it. */
const rateLimited = (policy: string, retryAfter: number) => ({
  status: 'error',
  code: 'RATE_LIMITED',
  message: expect.stringMatching(/\S/),
  policy,
  retryAfter,
});

@Controller()
class BadRpcController {
  @MessagePattern('bad')
  @RateLimit({ name: 'broken', algorithm: 'fixed-window', limit: 0, window: '1m', key: tenantKey })
  handle() {
    return 'never';
  }
}

@Controller()
class IpRpcController {
  @MessagePattern('by-ip')
  @RateLimit({ name: 'by-ip', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' })
  handle() {
    return 'never';
  }
}

@Controller()
class UserRpcController {
  @MessagePattern('by-user')
  @RateLimit({ name: 'per-user', algorithm: 'fixed-window', limit: 2, window: '1m' })
  handle() {
    return 'ok';
  }
}

/** Every behaviour of the RPC context on one transport; the Redis transport uses a redis-server of its own. */
export function rpcSuite(transport: TransportName): void {
  /**
   * The Redis transport's redis-server: one per app. Nest's ServerRedis does not wait for its subscriber to quit
   * on close, so on a shared server an app of the previous test could still take this test's messages (and log
   * into this test's logger, as Nest's logger is global): the 200 sends with no answer and the drop logged twice
   * of a loaded CI run.
   */
  let transportRedis: TestRedis | undefined;
  /** The limiter's store, another redis-server than the transport's (so killing it leaves the transport up). */
  let storeRedis: TestRedis;
  let rpc: RpcApp | undefined;
  let tenants = 0;
  const tenant = () => `${transport}-${++tenants}`;
  const start = async (options: RateLimitModuleOptions, controllers?: StartControllers) => {
    if (transport === 'redis') transportRedis ??= await startRedis(); // one per test, whose starts may fail
    return (rpc = await startRpcApp({ transport, options, redisPort: transportRedis?.port, controllers }));
  };

  beforeAll(async () => {
    storeRedis = await startRedis();
  });
  afterEach(async () => {
    await rpc?.close();
    rpc = undefined;
    await transportRedis?.stop();
    transportRedis = undefined;
  });
  afterAll(async () => {
    await storeRedis?.stop();
  });

  describe.each(['memory', 'redis'] as const)('on the %s store', (store) => {
    const options = (): RateLimitModuleOptions =>
      // A generous timeout: 200 decisions at once on 2 shared cores must not fall into the fail mode here.
      store === 'memory' ? {} : { redis: { url: storeRedis.url }, timeout: 2000 };

    it('200 concurrent sends at limit 100: exactly 100 answered, 100 errors of the denial shape', async () => {
      const { client, controller } = await start(options());
      const t = tenant();
      const { answered, errors } = await sendAll(
        client,
        'limited',
        Array.from({ length: 200 }, () => ({ tenant: t })),
      );
      expect(answered).toEqual(Array.from({ length: 100 }, () => ({ ok: true, tenant: t })));
      expect(errors).toEqual(Array.from({ length: 100 }, () => rateLimited('per-tenant', 60)));
      expect(controller.handled.limited).toBe(100);
      // Another tenant has its own count.
      await expect(send(client, 'limited', { tenant: tenant() })).resolves.toEqual(
        expect.objectContaining({ ok: true }),
      );
    });

    it('two policies are all-or-nothing: the denied messages consume neither (read back with peek)', async () => {
      const { app, client, controller } = await start(options());
      const t = tenant();
      const { answered, errors } = await sendAll(
        client,
        'pair',
        Array.from({ length: 5 }, () => ({ tenant: t })),
      );
      expect(answered).toEqual(['ok', 'ok', 'ok']);
      expect(errors).toEqual([rateLimited('narrow', 60), rateLimited('narrow', 60)]);
      expect(controller.handled.pair).toBe(3);
      const service = app.get(RateLimitService);
      expect((await service.peek('wide', `tenant:${t}`)).remaining).toBe(2);
      expect((await service.peek('narrow', `tenant:${t}`)).remaining).toBe(0);
    });
  });

  it('the denial shape exactly: retryAfter in whole seconds, absent when the cost can never fit', async () => {
    const { client, clock } = await start({});
    const t = tenant();
    for (let i = 0; i < 100; i++) await send(client, 'limited', { tenant: t });
    clock.advance(15_250);
    const denied = await send(client, 'limited', { tenant: t }).catch((e: unknown) => e);
    expect(denied).toStrictEqual({
      status: 'error',
      code: 'RATE_LIMITED',
      message: expect.stringMatching(/\S/),
      policy: 'per-tenant',
      retryAfter: 45, // 44.75 s to the window's end, rounded up
    });
    const never = await send(client, 'costly', { tenant: t, cost: 6 }).catch((e: unknown) => e);
    expect(never).toStrictEqual({
      status: 'error',
      code: 'RATE_LIMITED',
      message: expect.stringMatching(/\S/),
      policy: 'costly',
    });
    expect(Object.keys(never as object)).not.toContain('retryAfter');
    clock.advance(44_750);
    await expect(send(client, 'limited', { tenant: t })).resolves.toEqual({ ok: true, tenant: t });
  });

  it('an event over the limit is not handled, and the drop is logged once (a decision: not onError)', async () => {
    const failures: string[] = [];
    const svc = await start({ onError: (_e, policy) => failures.push(policy) });
    const t = tenant();
    for (let i = 0; i < 10; i++) await emit(svc.client, 'tick', { tenant: t });
    await untilProcessed(svc, 10);
    expect(svc.controller.handled.tick).toBe(3);
    for (let i = 0; i < 5; i++) await emit(svc.client, 'tick', { tenant: t });
    await emit(svc.client, 'tick', { tenant: tenant() });
    await untilProcessed(svc, 16);
    expect(svc.controller.handled.tick).toBe(4);
    const drops = svc.logs.find('warn', /Dropped an event/);
    expect(drops).toEqual([
      {
        level: 'warn',
        message: expect.stringContaining('RpcLimitedController.tick: rate limit "ticks" exceeded'),
        context: 'RateLimit',
      },
    ]);
    // Nest logs nothing per drop (the module's filter answers RateLimitDroppedEvent with an empty result).
    expect(svc.logs.entries.filter((e) => e.level === 'error')).toEqual([]);
    expect(failures).toEqual([]);
  });

  it("the store's Redis killed (SIGKILL): fail open answers, fail closed refuses, events likewise; nothing waits", async () => {
    const failures: string[] = [];
    const reasons: unknown[] = [];
    const doomed = await startRedis();
    try {
      const svc = await start({
        redis: { url: doomed.url },
        timeout: TIMEOUT_MS,
        onError: (error, policy) => {
          failures.push(policy);
          reasons.push(error);
        },
      });
      const t = tenant();
      await expect(send(svc.client, 'closed', { tenant: t })).resolves.toBe('closed ok');
      doomed.process.kill('SIGKILL');
      await new Promise((resolve) => doomed.process.once('exit', resolve));
      for (let i = 0; i < 5; i++) {
        await expect(send(svc.client, 'open', { tenant: t })).resolves.toBe('open ok');
        await expect(send(svc.client, 'closed', { tenant: t })).rejects.toStrictEqual({
          status: 'error',
          code: 'RATE_LIMIT_UNAVAILABLE',
          message: expect.stringMatching(/\S/),
          policy: 'closed',
          retryAfter: 1,
        });
      }
      const before = svc.processed();
      for (let i = 0; i < 3; i++) {
        await emit(svc.client, 'tick-open', { tenant: t });
        await emit(svc.client, 'tick-closed', { tenant: t });
      }
      await untilProcessed(svc, before + 6);
      expect(svc.controller.handled['tick-open']).toBe(3);
      expect(svc.controller.handled['tick-closed']).toBeUndefined();
      expect(svc.logs.find('warn', /Dropped an event/)).toEqual([
        expect.objectContaining({
          message: expect.stringMatching(/RpcLimitedController\.tickClosed: .*unavailable.*"ticks-closed"/),
        }),
      ]);
      expect(failures).toEqual(expect.arrayContaining(['open', 'closed', 'ticks-open', 'ticks-closed']));
      // Nothing waited for Redis: every call failed at once (the connection refused, then the open breaker),
      // none by its timeout (counted, not timed: a loaded machine slows the round trip, not this).
      expect(reasons.filter((error) => error instanceof RateLimitStoreTimeoutError)).toEqual([]);
    } finally {
      await doomed.stop();
    }
  });

  describe('start-up validation', () => {
    it('a bad policy on a message handler stops the start, naming Class.method', async () => {
      await expect(start({}, [BadRpcController])).rejects.toThrow(/BadRpcController\.handle/);
    });

    it("an 'ip' policy on a message handler is refused at start", async () => {
      await expect(start({}, [IpRpcController])).rejects.toThrow(
        /IpRpcController\.handle[\s\S]*'ip'|'ip'[\s\S]*IpRpcController\.handle/,
      );
    });

    it("a 'user' policy needs the `user` option, which then keys messages by the user it reads", async () => {
      await expect(start({}, [UserRpcController])).rejects.toThrow(/UserRpcController\.handle/);
      const { app, client } = await start(
        {
          user: (ctx) =>
            ctx.getType() === 'rpc' ? ctx.switchToRpc().getData<{ tenant?: string }>().tenant : undefined,
        },
        [UserRpcController],
      );
      const t = tenant();
      const { answered, errors } = await sendAll(client, 'by-user', [{ tenant: t }, { tenant: t }, { tenant: t }]);
      expect([answered, errors]).toEqual([['ok', 'ok'], [rateLimited('per-user', 60)]]);
      expect((await app.get(RateLimitService).peek('per-user', `user:${t}`)).remaining).toBe(0);
    });
  });
}

type StartControllers = NonNullable<Parameters<typeof startRpcApp>[0]['controllers']>;
