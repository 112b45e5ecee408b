import type { ServerResponse } from 'node:http';

import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Global,
  HttpCode,
  type INestApplication,
  Injectable,
  type MiddlewareConsumer,
  Module,
  type NestMiddleware,
  type NestModule,
  Post,
  Query,
  Res,
  UseInterceptors,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimitInterceptor,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
  type RateLimitReservation,
  RateLimitService,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { CapturingLogger } from '../support/log-lines.js';
import { TEST_START_MS } from '../support/time.js';

/** 1000 tokens a minute, reserved from the handlers' own code. */
const tokens: RateLimitPolicy = { name: 'ai-tokens', algorithm: 'token-bucket', limit: 1000, window: '1m' };
/** The key reservations are made for: an API key, which the log must never show. */
const KEY = 'sk-live-secret-4242';

/** An Express response, or a Fastify reply that wraps Node's as `raw`. */
type Reply = ServerResponse | { raw: ServerResponse };

/** What the last handler reserved, and a promise of its response's close (after the module's own listener). */
@Injectable()
class LastRequest {
  reservation: RateLimitReservation | undefined;
  closed: Promise<void> = Promise.resolve();
  /** Makes the reservation the handler of /ai/later left to make, in its request's context. */
  later: () => Promise<void> = () => Promise.resolve();

  watch(reply: Reply): void {
    const res = 'raw' in reply ? reply.raw : reply;
    // Registered in the handler, after the guard's listener: once it runs, the scope has ended.
    this.closed = new Promise((resolve) => res.once('close', () => resolve()));
  }
}

/** LastRequest for the controller and for a middleware's module alike. */
@Global()
@Module({ providers: [LastRequest], exports: [LastRequest] })
class LastRequestModule {}

@Controller('ai')
class AiController {
  constructor(
    private readonly rateLimits: RateLimitService,
    private readonly last: LastRequest,
  ) {}

  /** Reserves and returns without settling: the leak the scope settles at the estimate. */
  @Post('leak')
  @HttpCode(200)
  async leak(@Query('cost') cost: string, @Res({ passthrough: true }) reply: Reply): Promise<string> {
    this.last.watch(reply);
    this.last.reservation = await this.rateLimits.reserve([{ policy: tokens, key: KEY, cost: Number(cost) }]);
    return 'left open';
  }

  /** As `leak`, behind RateLimitInterceptor, which enters the scope again after every guard. */
  @Post('leak-intercepted')
  @HttpCode(200)
  @UseInterceptors(RateLimitInterceptor)
  leakIntercepted(@Query('cost') cost: string, @Res({ passthrough: true }) reply: Reply): Promise<string> {
    return this.leak(cost, reply);
  }

  /** Leaves behind a reservation to make in the request's async context once it has ended (`LastRequest.later`). */
  @Post('later')
  @HttpCode(200)
  later(@Res({ passthrough: true }) reply: Reply): string {
    this.last.watch(reply);
    let release: () => void = () => undefined;
    const made = new Promise<void>((resolve) => (release = resolve)).then(() =>
      this.rateLimits.reserve([{ policy: tokens, key: KEY, cost: 300 }]),
    );
    this.last.later = async () => {
      release();
      this.last.reservation = await made;
    };
    return 'later';
  }

  @Post('settle')
  @HttpCode(200)
  async settle(@Query('cost') cost: string, @Res({ passthrough: true }) reply: Reply): Promise<string> {
    this.last.watch(reply);
    const reservation = await this.rateLimits.reserve([{ policy: tokens, key: KEY, cost: Number(cost) }]);
    this.last.reservation = reservation;
    await reservation.settle(100);
    return 'settled';
  }

  @Post('cancel')
  @HttpCode(200)
  async cancel(@Query('cost') cost: string, @Res({ passthrough: true }) reply: Reply): Promise<string> {
    this.last.watch(reply);
    const reservation = await this.rateLimits.reserve([{ policy: tokens, key: KEY, cost: Number(cost) }]);
    this.last.reservation = reservation;
    await reservation.cancel();
    return 'cancelled';
  }
}

/** An app's global guard that awaits, registered before the module's: a scope the module's guard entered would not reach the handler. */
@Injectable()
class AwaitingGuard implements CanActivate {
  async canActivate(_ctx: ExecutionContext): Promise<boolean> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return true;
  }
}

@Module({ providers: [{ provide: APP_GUARD, useClass: AwaitingGuard }] })
class AwaitingAuthModule {}

/** A middleware that reserves for the requests to /ai/settle and leaves it open: before any guard runs. */
@Injectable()
class ReservingMiddleware implements NestMiddleware {
  constructor(
    private readonly rateLimits: RateLimitService,
    private readonly last: LastRequest,
  ) {}

  async use(_req: unknown, reply: Reply, next: () => void): Promise<void> {
    this.last.watch(reply);
    this.last.reservation = await this.rateLimits.reserve([{ policy: tokens, key: KEY, cost: 200 }]);
    next();
  }
}

@Module({ providers: [ReservingMiddleware] })
class ReservingMiddlewareModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(ReservingMiddleware).forRoutes(AiController);
  }
}

const LEAK = /neither settled nor cancelled/;

async function start(adapter: AdapterName, imports: unknown[] = [], options: RateLimitModuleOptions = {}) {
  const logs = new CapturingLogger();
  const clock = new FakeClock(TEST_START_MS);
  const { app, server } = await createApp(
    adapter,
    {
      imports: [
        LastRequestModule,
        ...(imports as []),
        RateLimitModule.forRoot({ store: new MemoryRateLimitStore({ clock }), ...options }),
      ],
      controllers: [AiController],
    },
    clock,
    { logger: logs },
  );
  const service = app.get(RateLimitService);
  const last = app.get(LastRequest);
  // The first reserve() turns tracking on (and, made outside any request, is not tracked itself).
  const first = await service.reserve([{ policy: tokens, key: 'warm-up', cost: 1 }]);
  await first.cancel();
  /** Posts to `path` and waits for the server to close its response, which ends the request's scope. */
  const post = async (path: string) => {
    const res = await request(server() as Parameters<typeof request>[0]).post(path);
    await last.closed;
    return res;
  };
  const left = async () => (await service.peek(tokens, KEY)).remaining;
  return { app, logs, last, post, left, leaks: () => logs.find('warn', LEAK) };
}

describe.each(ADAPTERS)('reserve(): a reservation its request left open (%s)', (adapter) => {
  let app: INestApplication | undefined;
  afterEach(() => app?.close());

  it('is settled at its estimate when the request ends, and reported once without its key', async () => {
    const t = await start(adapter);
    app = t.app;
    expect((await t.post('/ai/leak?cost=300')).status).toBe(200);
    expect(await t.left()).toBe(700);
    const leaks = t.leaks();
    expect(leaks).toHaveLength(1);
    expect(leaks[0]?.message).toContain('AiController.leak');
    expect(leaks[0]?.message).toContain('ai-tokens: 300');
    expect(leaks[0]?.message).not.toContain(KEY);
    expect(t.logs.lines.join('\n')).not.toContain(KEY);
  });

  it('regression: settle() after the request ended is a no-op resolving with its decisions', async () => {
    const t = await start(adapter);
    app = t.app;
    await t.post('/ai/leak?cost=300');
    const reservation = t.last.reservation as RateLimitReservation;
    const decisions = await reservation.settle(100);
    expect(decisions).toEqual(reservation.decisions);
    await reservation.cancel();
    expect(await t.left()).toBe(700);
    expect(t.leaks()).toHaveLength(1);
  });

  it('reports a leak on every request once, holding the next ones back', async () => {
    const t = await start(adapter);
    app = t.app;
    await t.post('/ai/leak?cost=100');
    await t.post('/ai/leak?cost=200');
    await t.post('/ai/leak?cost=300');
    expect(await t.left()).toBe(400);
    expect(t.leaks()).toHaveLength(1);
  });

  it.each([
    ['settles', '/ai/settle?cost=300', 900],
    ['cancels', '/ai/cancel?cost=300', 1000],
  ])('logs nothing when the handler %s', async (_, path, remaining) => {
    const t = await start(adapter);
    app = t.app;
    expect((await t.post(path)).status).toBe(200);
    expect(await t.left()).toBe(remaining);
    expect(t.last.reservation).toBeDefined();
    expect(t.leaks()).toHaveLength(0);
  });

  it("tracks it behind a global guard of the app that awaited before the module's (the scope is entered as the server receives the request)", async () => {
    const t = await start(adapter, [AwaitingAuthModule]);
    app = t.app;
    await t.post('/ai/leak?cost=300');
    expect(t.leaks()).toHaveLength(1);
    expect(t.leaks()[0]?.message).toContain('AiController.leak');
    await t.last.reservation?.settle(100); // settled at its estimate: a no-op
    expect(await t.left()).toBe(700);
  });

  it("tracks a middleware's reservation, named by the handler of its request", async () => {
    const t = await start(adapter, [ReservingMiddlewareModule]);
    app = t.app;
    await t.post('/ai/settle?cost=300'); // the middleware's 200 left open; the handler's 300 settled at 100
    expect(await t.left()).toBe(1000 - 200 - 100);
    expect(t.leaks()).toHaveLength(1);
    expect(t.leaks()[0]?.message).toContain('made in AiController.settle');
    expect(t.leaks()[0]?.message).toContain('(ai-tokens: 200)');
  });

  it('tracks it behind such a guard when the route has RateLimitInterceptor', async () => {
    const t = await start(adapter, [AwaitingAuthModule]);
    app = t.app;
    await t.post('/ai/leak-intercepted?cost=300');
    expect(t.leaks()).toHaveLength(1);
    expect(t.leaks()[0]?.message).toContain('AiController.leakIntercepted');
    await t.last.reservation?.settle(100);
    expect(await t.left()).toBe(700);
  });

  it("tracks it with `global: false` too (the module's APP_GUARD decides nothing, but enters the scope)", async () => {
    const t = await start(adapter, [], { global: false });
    app = t.app;
    await t.post('/ai/leak?cost=300');
    expect(t.leaks()).toHaveLength(1);
    expect(await t.left()).toBe(700);
  });

  it('leaves alone a reservation made in a request after it ended (a continuation the handler left)', async () => {
    const t = await start(adapter);
    app = t.app;
    await t.post('/ai/later');
    await t.last.later();
    expect(t.leaks()).toHaveLength(0);
    // Still open: settling it gives back what the estimate exceeded.
    await t.last.reservation?.settle(50);
    expect(await t.left()).toBe(950);
  });

  it('leaves alone a reservation made outside any request, after tracking is on', async () => {
    const t = await start(adapter);
    app = t.app;
    const outside = await t.app.get(RateLimitService).reserve([{ policy: tokens, key: KEY, cost: 300 }]);
    await t.post('/ai/settle?cost=100');
    expect(t.leaks()).toHaveLength(0);
    await outside.settle(50);
    expect(await t.left()).toBe(850);
  });
});
