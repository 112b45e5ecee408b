import { Controller, Get, type INestApplication, Module, Query, UseGuards } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import {
  RATE_LIMIT_CLOCK,
  RateLimit,
  RateLimitExceededException,
  RateLimitGuard,
  RateLimitModule,
  RateLimitService,
  type RateLimitPolicy,
  type RateLimitStore,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { TEST_START_MS } from '../support/time.js';

interface Req {
  query: Record<string, string | undefined>;
}
const rowsOf = (ctx: Parameters<Exclude<RateLimitPolicy['cost'], number | undefined>>[0]) =>
  Number(ctx.switchToHttp().getRequest<Req>().query.rows ?? 1);

const tokens: RateLimitPolicy = {
  name: 'ai-tokens',
  algorithm: 'token-bucket',
  limit: 1000,
  window: '1m',
  key: 'ip',
  cost: 0,
};

@Controller()
class CostController {
  @Get('export')
  @RateLimit({ name: 'rows', algorithm: 'gcra', limit: 100, window: '1m', key: 'ip', cost: rowsOf })
  export() {
    return 'ok';
  }

  @Get('open')
  @RateLimit({
    name: 'open-cost',
    algorithm: 'gcra',
    limit: 100,
    window: '1m',
    key: 'ip',
    failMode: 'open',
    cost: rowsOf,
  })
  open() {
    return 'ok';
  }

  @Get('closed')
  @RateLimit({
    name: 'closed-cost',
    algorithm: 'gcra',
    limit: 100,
    window: '1m',
    key: 'ip',
    failMode: 'closed',
    cost: rowsOf,
  })
  closed() {
    return 'ok';
  }

  @Get('twice')
  @UseGuards(RateLimitGuard, RateLimitGuard)
  @RateLimit({ name: 'twice', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' })
  twice() {
    return 'ok';
  }

  @Get('ai')
  @RateLimit(tokens)
  ai() {
    return 'ok';
  }

  @Get('charge')
  async charge(@Query('tokens') tokens: string) {
    const decision = await this.rateLimits.consume('ai-tokens', 'charged', { cost: Number(tokens) });
    if (!decision.allowed) throw new RateLimitExceededException(decision);
    return decision;
  }

  constructor(private readonly rateLimits: RateLimitService) {}
}

describe.each(ADAPTERS)('cost and the service on %s', (adapter) => {
  let app: INestApplication;
  const errors: [string, string][] = [];
  beforeEach(async () => {
    errors.length = 0;
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({ onError: (error, policy) => errors.push([policy, error.message]) })],
      controllers: [CostController],
    }));
  });
  afterEach(() => app.close());
  const get = (path: string) => request(app.getHttpServer()).get(path);

  it('weighs each request by its cost', async () => {
    expect((await get('/export?rows=60')).headers['ratelimit']).toBe('"rows";r=40;t=36');
    const denied = await get('/export?rows=41');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1'); // one unit more than is left: 600 ms
    expect((await get('/export?rows=40')).status).toBe(200);
  });

  it('refuses a cost larger than the capacity with a message that says so, and no Retry-After', async () => {
    const res = await get('/export?rows=101');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body).toMatchObject({ code: 'RATE_LIMITED', policy: 'rows' });
    expect(res.body).not.toHaveProperty('retryAfter'); // retrying cannot help
    expect(res.body.message).toMatch(/cost 101 is larger than the capacity 100 .* can never be allowed/);
  });

  it('treats a bad cost as a failure of that policy: fail open lets it through, fail closed answers 503', async () => {
    for (const rows of ['-1', 'NaN', '1.5', 'abc']) {
      expect((await get(`/open?rows=${rows}`)).status).toBe(200);
      const closed = await get(`/closed?rows=${rows}`);
      expect(closed.status).toBe(503);
      expect(closed.headers['retry-after']).toBe('1');
      expect(closed.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable', policy: 'closed-cost' });
    }
    expect(errors).toHaveLength(8);
    expect(errors[0]).toEqual([
      'open-cost',
      'Invalid rate-limit policy "open-cost" (declared on CostController.open), field "cost": the cost function returned a bad value: cost must be a non-negative integer, got -1',
    ]);
  });

  it('counts a request once, however many times the guard is registered', async () => {
    expect((await get('/twice')).headers['ratelimit']).toBe('"twice";r=2;t=40');
    expect((await get('/twice')).headers['ratelimit']).toBe('"twice";r=1;t=40');
  });

  it('consumes and refunds through RateLimitService, by name, on the same state as the guard', async () => {
    const service = app.get(RateLimitService);
    const charged = await service.consume('ai-tokens', 'ip:127.0.0.1', { cost: 700 });
    expect(charged).toMatchObject({ allowed: true, remaining: 300 });
    expect((await service.consume('ai-tokens', 'ip:127.0.0.1', { cost: 400 })).allowed).toBe(false);
    expect((await service.refund('ai-tokens', 'ip:127.0.0.1', 500)).remaining).toBe(800);
    expect((await get('/ai')).headers['ratelimit']).toBe('"ai-tokens";r=800;t=12');
    expect(await service.peek(tokens, 'ip:127.0.0.1')).toMatchObject({ allowed: true, remaining: 800 });
    const [a, b] = await service.consumeMany([
      { policy: 'ai-tokens', key: 'ip:127.0.0.1', cost: 100 },
      { policy: 'rows', key: 'ip:127.0.0.1', cost: 101 },
    ]);
    expect([a?.allowed, b?.allowed]).toEqual([true, false]);
    expect((await service.peek('ai-tokens', 'ip:127.0.0.1')).remaining).toBe(800);
    await service.reset('ai-tokens', 'ip:127.0.0.1');
    expect((await service.peek('ai-tokens', 'ip:127.0.0.1')).remaining).toBe(1000);
  });

  it('answers a RateLimitExceededException thrown by your own code with 429 and Retry-After', async () => {
    expect((await get('/charge?tokens=990')).status).toBe(200);
    const denied = await get('/charge?tokens=20');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('1'); // 10 tokens short at 1000 per minute: 600 ms
    expect(denied.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: 'Rate limit "ai-tokens" exceeded; retry in 1 s',
      policy: 'ai-tokens',
      retryAfter: 1,
    });
  });

  it('rejects unknown names and bad arguments with clear errors', async () => {
    const service = app.get(RateLimitService);
    await expect(service.consume('nope', 'k')).rejects.toThrow(
      /policy "nope" \(declared on RateLimitService\): no policy of that name/,
    );
    await expect(service.consume('ai-tokens', 'k', { cost: -2 })).rejects.toThrow(
      /field "cost": cost must be a non-negative integer, got -2/,
    );
    await expect(service.refund('ai-tokens', 'k', 1.5)).rejects.toThrow(
      /field "amount": amount must be a non-negative integer/,
    );
    await expect(service.consume('ai-tokens', '')).rejects.toThrow(/field "key": key must be a non-empty string/);
  });
});

describe('the module', () => {
  it('works through forRootAsync with inject, and passes contexts of other transports', async () => {
    const CONFIG = Symbol('config');
    @Module({ providers: [{ provide: CONFIG, useValue: { limit: 1 } }], exports: [CONFIG] })
    class ConfigModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRootAsync({
          imports: [ConfigModule],
          inject: [CONFIG],
          useFactory: (config: { limit: number }) => ({
            defaults: [{ name: 'global', algorithm: 'fixed-window', limit: config.limit, window: '1m' }],
          }),
        }),
      ],
      controllers: [CostController],
    })
      .overrideProvider(RATE_LIMIT_CLOCK)
      .useValue(new FakeClock(TEST_START_MS))
      .compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    // A context of a third-party transport (say nestjs-telegraf's): nothing planned for it, nothing to decide.
    const telegraf = {
      getType: () => 'telegraf',
      getArgs: () => {
        throw new Error('not read');
      },
    };
    expect(await app.get(RateLimitGuard).canActivate(telegraf as never)).toBe(true);
    expect((await request(app.getHttpServer()).get('/twice')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/twice')).status).toBe(429);
    await app.close();
  });

  it('takes a custom store, which wins over redis', async () => {
    const seen: RateLimitStoreItem[][] = [];
    const store: RateLimitStore = {
      consume: async (items) => {
        seen.push([...items]);
        return items.map((i) => ({
          allowed: true,
          policy: i.policy.name,
          limit: 1,
          remaining: 1,
          resetMs: 0,
          retryAfterMs: 0,
        }));
      },
      peek: async () => [],
      refund: async () => [],
      reset: async () => undefined,
    };
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ store, redis: { url: 'redis://127.0.0.1:1' } })],
      controllers: [CostController],
    });
    await request(app.getHttpServer()).get('/export?rows=7');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.[0]).toMatchObject({ key: 'ip:127.0.0.1', cost: 7 });
    await app.close();
  });
});
