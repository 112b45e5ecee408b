import {
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  type INestMicroservice,
  Module,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientTCP, EventPattern, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RATE_LIMIT_CLOCK, RateLimit, RateLimitGuard, RateLimitModule } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { freePort } from '../support/redis-server.js';
import { CapturingLogger } from '../support/log-lines.js';
import { alignedStart } from '../support/time.js';
import { emit, type RpcClient, send, sendAll, type TenantMessage, transportPair, untilProcessed } from './fixtures.js';

/** The tenant of an HTTP request (`?tenant=`) or of a message: one policy can count both. */
const eitherTenant = (ctx: ExecutionContext): string | undefined => {
  const tenant =
    ctx.getType() === 'http'
      ? ctx.switchToHttp().getRequest<{ query: { tenant?: string } }>().query.tenant
      : ctx.switchToRpc().getData<TenantMessage>().tenant;
  return tenant === undefined ? undefined : `tenant:${tenant}`;
};

const shared = { name: 'shared', algorithm: 'fixed-window', limit: 4, window: '1m', key: eitherTenant } as const;
const events = { name: 'hybrid-events', algorithm: 'fixed-window', limit: 2, window: '1m', key: eitherTenant } as const;

@Controller('hybrid')
class HybridController {
  readonly handled: Record<string, number> = {};

  @Get()
  @RateLimit(shared)
  http() {
    return 'http ok';
  }

  @MessagePattern('hybrid')
  @RateLimit(shared)
  message() {
    this.handled.message = (this.handled.message ?? 0) + 1;
    return 'rpc ok';
  }

  @EventPattern('hybrid-tick')
  @RateLimit(events)
  tick(@Payload() _data: TenantMessage) {
    this.handled.tick = (this.handled.tick ?? 0) + 1;
  }
}

/** The same handlers, with the module's guard put on the controller: it applies without inheritAppConfig. */
@Controller('guarded')
@UseGuards(RateLimitGuard)
class GuardedController extends HybridController {}

interface Hybrid {
  app: INestApplication;
  client: RpcClient;
  logs: CapturingLogger;
  controller: HybridController;
  processed(): number;
}

describe('a hybrid app (HTTP + microservice on TCP)', () => {
  let hybrid: Hybrid | undefined;
  afterEach(async () => {
    await hybrid?.client.close();
    await hybrid?.app.close();
    hybrid = undefined;
  });

  async function startHybrid(inheritAppConfig: boolean, controller: typeof HybridController): Promise<Hybrid> {
    const logs = new CapturingLogger();
    const { server, client } = await transportPair('tcp');
    let processed = 0;
    server.setOnProcessingEndHook(() => processed++);
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({})],
      controllers: [controller],
    })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(new FakeClock(alignedStart(60_000) + 60_000))
      .compile();
    const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: logs });
    app.connectMicroservice({ strategy: server }, { inheritAppConfig });
    await app.init();
    await app.startAllMicroservices();
    await client.connect();
    hybrid = { app, client, logs, controller: app.get(controller), processed: () => processed };
    return hybrid;
  }

  it('with inheritAppConfig: true, the global guard limits messages and events, one policy across HTTP and RPC', async () => {
    const { app, client, logs, controller, processed } = await startHybrid(true, HybridController);
    const http = () => request(app.getHttpServer()).get('/hybrid?tenant=a');
    expect((await http()).status).toBe(200);
    expect((await http()).status).toBe(200);
    const { answered, errors } = await sendAll(client, 'hybrid', [{ tenant: 'a' }, { tenant: 'a' }, { tenant: 'a' }]);
    expect(answered).toEqual(['rpc ok', 'rpc ok']);
    expect(errors).toEqual([
      { status: 'error', code: 'RATE_LIMITED', message: expect.stringMatching(/\S/), policy: 'shared', retryAfter: 60 },
    ]);
    const denied = await http();
    expect([denied.status, denied.body.policy]).toEqual([429, 'shared']);
    for (let i = 0; i < 4; i++) await emit(client, 'hybrid-tick', { tenant: 'a' });
    await untilProcessed({ processed }, 3 + 4);
    expect(controller.handled).toEqual({ message: 2, tick: 2 });
    expect(logs.find('warn', /Dropped an event of HybridController\.tick/)).toHaveLength(1);
    expect(logs.entries.filter((e) => e.level === 'error')).toEqual([]);
  });

  // Regression (the first row): the microservice of a hybrid app gets the app's APP_GUARD only with
  // inheritAppConfig; it used to be left unlimited, silently (6 answered at a limit of 4).
  it.each([
    {
      guard: 'the guard the module puts on microservice handlers',
      controller: HybridController,
      path: '/hybrid',
      tenant: 'b',
    },
    {
      guard: '@UseGuards(RateLimitGuard) on the controller as well',
      controller: GuardedController,
      path: '/guarded',
      tenant: 'c',
    },
  ])(
    'WITHOUT inheritAppConfig (no global enhancers), $guard limits messages and events, each decided once',
    async ({ controller: controllerClass, path, tenant }) => {
      const { app, client, logs, controller, processed } = await startHybrid(false, controllerClass);
      const { answered, errors } = await sendAll(
        client,
        'hybrid',
        Array.from({ length: 6 }, () => ({ tenant })),
      );
      expect(answered).toHaveLength(4);
      expect(errors).toEqual([
        expect.objectContaining({ code: 'RATE_LIMITED', policy: 'shared' }),
        expect.objectContaining({ code: 'RATE_LIMITED', policy: 'shared' }),
      ]);
      for (let i = 0; i < 4; i++) await emit(client, 'hybrid-tick', { tenant });
      await untilProcessed({ processed }, 6 + 4);
      expect(controller.handled).toEqual({ message: 4, tick: 2 });
      expect(logs.find('warn', new RegExp(`Dropped an event of ${controllerClass.name}\\.tick`))).toHaveLength(1);
      // The drop is the module's decision: its filter goes with its guard, so Nest logs no error for it.
      expect(logs.entries.filter((e) => e.level === 'error')).toEqual([]);
      // One policy across HTTP and RPC: the messages used the tenant's budget.
      expect((await request(app.getHttpServer()).get(`${path}?tenant=${tenant}`)).status).toBe(429);
    },
  );
});

describe('a standalone microservice made with NestFactory.createMicroservice (system clock)', () => {
  @Controller()
  class StandaloneController {
    @MessagePattern('standalone')
    @RateLimit({ name: 'standalone', algorithm: 'token-bucket', limit: 2, window: '10s', key: eitherTenant })
    handle() {
      return 'ok';
    }
  }
  @Module({ imports: [RateLimitModule.forRoot({})], controllers: [StandaloneController] })
  class StandaloneModule {}

  let app: INestMicroservice;
  let client: ClientTCP;
  afterEach(async () => {
    await client?.close();
    await app?.close();
  });

  it("gets the module's global guard: the third message within the window is denied", async () => {
    const port = await freePort();
    app = await NestFactory.createMicroservice(StandaloneModule, {
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port },
      logger: false,
    });
    await app.listen();
    client = new ClientTCP({ host: '127.0.0.1', port });
    await client.connect();
    await expect(send(client, 'standalone', { tenant: 'd' })).resolves.toBe('ok');
    await expect(send(client, 'standalone', { tenant: 'd' })).resolves.toBe('ok');
    const denied = await send(client, 'standalone', { tenant: 'd' }).catch((e: unknown) => e);
    // One token per 5 s: within a second of the last one, retryAfter is 5 (4 s and a fraction, rounded up).
    expect(denied).toStrictEqual({
      status: 'error',
      code: 'RATE_LIMITED',
      message: expect.stringMatching(/\S/),
      policy: 'standalone',
      retryAfter: 5,
    });
  });
});
