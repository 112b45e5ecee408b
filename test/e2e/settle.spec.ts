import {
  Body,
  type CanActivate,
  Controller,
  type ExecutionContext,
  HttpCode,
  type INestApplication,
  Injectable,
  type MessageEvent,
  Post,
  Query,
  Sse,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Observable } from 'rxjs';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimit,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { TEST_START_MS } from '../support/time.js';

/** What the fake model reports as used, which each test sets: the actual cost a completion is settled at. */
@Injectable()
class FakeModel {
  usage = 0;
  fails = false;

  complete(): { usage: { totalTokens: number } } {
    if (this.fails) throw new Error('the provider answered 500');
    return { usage: { totalTokens: this.usage } };
  }
}

interface Completion {
  usage: { totalTokens: number };
}
const estimateOf = (ctx: ExecutionContext) =>
  Number(ctx.switchToHttp().getRequest<{ query: Record<string, string> }>().query.maxTokens);

/** 1000 tokens a minute per caller: the estimate (`maxTokens`) is charged first, then settled at the usage. */
const tokens: RateLimitPolicy = {
  name: 'ai-tokens',
  algorithm: 'token-bucket',
  limit: 1000,
  window: '1m',
  key: () => 'tenant-1',
  cost: estimateOf,
  settle: (_ctx, result: Completion) => result.usage.totalTokens,
};

/** A route's own guard that refuses every request: it runs after the global guard has charged the estimate. */
class RefuseAll implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

@Controller('guarded')
class GuardedController {
  /** `tokens` is decided by the global guard; the user-keyed policy waits for the route's guard, which refuses. */
  @Post()
  @UseGuards(RefuseAll)
  @RateLimit([tokens, { name: 'per-user', algorithm: 'fixed-window', limit: 100, window: '1m', key: 'user' }])
  guarded(): string {
    return 'never';
  }
}

@Controller('ai')
class AiController {
  constructor(private readonly model: FakeModel) {}

  @Post('complete')
  @HttpCode(200)
  @RateLimit(tokens)
  complete(@Query('maxTokens') _max: string, @Body() _body: unknown): Completion {
    return this.model.complete();
  }

  /** A streamed completion: `chunks` events of text, then one with the usage (as model SDKs send it last). */
  @Sse('stream')
  @RateLimit({ ...tokens, settle: (_ctx, last: MessageEvent) => (last.data as Completion).usage.totalTokens })
  stream(@Query('chunks') chunks: string, @Query('maxTokens') _max: string): Observable<MessageEvent> {
    return new Observable<MessageEvent>((subscriber) => {
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < Number(chunks)) {
          subscriber.next({ data: { text: `chunk ${++sent}` } });
          return;
        }
        subscriber.next({ data: this.model.complete() });
        subscriber.complete();
      }, 5);
      return () => clearInterval(timer);
    });
  }
}

describe.each(ADAPTERS)('settle: a charge settled at the actual cost (%s)', (adapter) => {
  let app: INestApplication;
  let clock: FakeClock;
  let model: FakeModel;
  let service: RateLimitService;
  let server: () => Parameters<typeof request>[0];

  beforeEach(async () => {
    clock = new FakeClock(TEST_START_MS);
    let httpServer: () => unknown;
    ({ app, server: httpServer } = await createApp(
      adapter,
      {
        imports: [RateLimitModule.forRoot({ store: new MemoryRateLimitStore({ clock }) })],
        controllers: [AiController, GuardedController],
        providers: [FakeModel],
      },
      clock,
    ));
    server = () => httpServer() as Parameters<typeof request>[0];
    model = app.get(FakeModel);
    service = app.get(RateLimitService);
  });
  afterEach(() => app.close());

  /** The tokens left once every settlement under way has reached the store. */
  const left = async () => {
    await app.get(RateLimiter).refundsSettled();
    return (await service.peek('ai-tokens', 'tenant-1')).remaining;
  };
  const complete = (maxTokens: number) => request(server()).post(`/ai/complete?maxTokens=${maxTokens}`).send({});

  it('charges a completion its actual tokens: the estimate less what the model did not use', async () => {
    model.usage = 120;
    const res = await complete(500);
    expect(res.status).toBe(200);
    // The header was written when the estimate was charged
    expect(res.headers['ratelimit']).toContain('r=500');
    expect(await left()).toBe(880);
  });

  it('charges an overrun past the limit, and later requests wait until the debt is paid back', async () => {
    model.usage = 1300;
    expect((await complete(100)).status).toBe(200);
    expect(await left()).toBe(0);
    // 1300 taken of 1000: a request of 100 waits for 400 to drain at 1000 a minute, 24 s
    const denied = await complete(100);
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('24');
    clock.advance(23_000);
    expect((await complete(100)).status).toBe(429);
    clock.advance(1_000);
    model.usage = 100;
    expect((await complete(100)).status).toBe(200);
  });

  it('charges a failed call nothing: a handler that throws gets the whole estimate back', async () => {
    model.fails = true;
    expect((await complete(500)).status).toBe(500);
    expect(await left()).toBe(1000);
  });

  it("gives the estimate back when the route's own guard refuses after the global guard charged it", async () => {
    const res = await request(server()).post('/guarded?maxTokens=400').send({});
    expect(res.status).toBe(403);
    expect(await left()).toBe(1000);
  });

  it('settles a streamed completion when the stream completes, at its last event', async () => {
    model.usage = 250;
    const res = await request(server()).get('/ai/stream?chunks=3&maxTokens=600');
    expect(res.status).toBe(200);
    expect(res.text.match(/^data: /gm)).toHaveLength(4);
    expect(await left()).toBe(750);
  });
});

describe('settle: what the start refuses', () => {
  it('a settle policy on a store that cannot charge an overrun, naming Class.method', async () => {
    const store = new MemoryRateLimitStore();
    const withoutCharge = Object.assign(Object.create(store) as MemoryRateLimitStore, { charge: undefined });
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store: withoutCharge })],
      controllers: [AiController],
      providers: [FakeModel],
    }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(
      'Invalid rate-limit policy "ai-tokens" (declared on AiController.complete), field "settle": settles its charge, but the store (MemoryRateLimitStore) cannot charge an overrun: it has no charge()',
    );
  });

  it.each<[string, Partial<RateLimitPolicy>, string]>([
    ['concurrency', { algorithm: 'concurrency', window: '5m' }, 'does not apply to concurrency'],
    ['count', { count: 'failed' }, 'does not combine with count'],
    ['lease', { lease: 10 }, 'does not combine with lease'],
    ['a settle that is not a function', { settle: 5 as never }, 'must be a function (ctx, result) => the actual cost'],
  ])('a settle policy with %s', async (_, change, message) => {
    @Controller()
    class Bad {
      @Post('x')
      @RateLimit({ ...tokens, key: 'ip', ...change } as RateLimitPolicy)
      x() {
        return 'ok';
      }
    }
    const start = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store: new MemoryRateLimitStore() })],
        controllers: [Bad],
      }).compile();
      moduleRef.useLogger(false);
      await moduleRef.init();
    };
    await expect(start()).rejects.toThrow(message);
  });
});
