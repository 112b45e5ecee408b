import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import {
  RateLimit,
  RateLimitModule,
  SkipRateLimit,
  type RateLimitDuration,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { nth } from '../support/harness.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

const policy = (name: string, limit: number): RateLimitPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit,
  window: '1m',
  key: 'ip',
});

@Controller('layered')
@RateLimit([policy('shared', 5), policy('class-only', 50)])
class LayeredController {
  @Get('inherits')
  inherits() {
    return 'ok';
  }

  @Get('overrides')
  @RateLimit(policy('shared', 2))
  overrides() {
    return 'ok';
  }

  @Get('skips-all')
  @SkipRateLimit()
  skipsAll() {
    return 'ok';
  }

  @Get('skips-some')
  @SkipRateLimit('shared', 'global')
  skipsSome() {
    return 'ok';
  }
}

@Controller('free')
@SkipRateLimit()
class FreeController {
  @Get()
  get() {
    return 'ok';
  }
}

@Controller('clash')
class ClashController {
  @Get('a')
  @RateLimit(policy('same-name', 5))
  a() {
    return 'a';
  }

  @Get('b')
  @RateLimit(policy('same-name', 10))
  b() {
    return 'b';
  }
}

const policiesOf = (res: request.Response): string[] =>
  String(res.headers['ratelimit-policy'] ?? '')
    .split(', ')
    .filter(Boolean)
    .map((item) => nth(item.split(';'), 0))
    .sort();

describe.each(ADAPTERS)('policy layering on %s', (adapter) => {
  let app: INestApplication;
  beforeEach(async () => {
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({ defaults: [policy('global', 100), policy('shared', 1000)] })],
      controllers: [LayeredController, FreeController, ClashController],
    }));
  });
  afterEach(() => app.close());

  it('applies defaults, then class, then handler policies, a name replacing the earlier one', async () => {
    const res = await request(app.getHttpServer()).get('/layered/inherits');
    expect(policiesOf(res)).toEqual(['"class-only"', '"global"', '"shared"']);
    expect(res.headers['ratelimit-policy']).toContain('"shared";q=5;w=60');

    const over = await request(app.getHttpServer()).get('/layered/overrides');
    expect(over.headers['ratelimit-policy']).toContain('"shared";q=2;w=60');
    await request(app.getHttpServer()).get('/layered/overrides');
    const denied = await request(app.getHttpServer()).get('/layered/overrides');
    expect(denied.status).toBe(429);
    expect(denied.body.policy).toBe('shared');
  });

  it('keeps apart the state of same-named policies with different limits', async () => {
    for (let i = 0; i < 5; i++) expect((await request(app.getHttpServer()).get('/clash/a')).status).toBe(200);
    expect((await request(app.getHttpServer()).get('/clash/a')).status).toBe(429);
    const b = await request(app.getHttpServer()).get('/clash/b');
    expect(b.status).toBe(200);
    expect(b.headers['ratelimit']).toContain('"same-name";r=9;');
  });

  it('skips every policy with @SkipRateLimit() and the named ones with @SkipRateLimit(names)', async () => {
    const all = await request(app.getHttpServer()).get('/layered/skips-all');
    expect(all.status).toBe(200);
    expect(all.headers['ratelimit-policy']).toBeUndefined();
    const some = await request(app.getHttpServer()).get('/layered/skips-some');
    expect(policiesOf(some)).toEqual(['"class-only"']);
    const free = await request(app.getHttpServer()).get('/free');
    expect(free.headers['ratelimit']).toBeUndefined();
  });
});

describe('policies are validated at start-up', () => {
  @Controller('bad')
  class BadController {
    @Get()
    @RateLimit({ name: 'broken', algorithm: 'fixed-window', limit: 0, window: '1m' })
    handler() {
      return 'never';
    }
  }

  async function start(controllers: (new () => unknown)[], defaults: RateLimitPolicy[] = []): Promise<unknown> {
    let app: INestApplication | undefined;
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ defaults })],
        controllers,
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    } catch (error) {
      return error;
    } finally {
      await app?.close();
    }
    return undefined;
  }

  it('stops the app with an error naming Controller.handler, the policy and the field', async () => {
    const error = (await start([BadController])) as Error;
    expect(error.message).toBe(
      'Invalid rate-limit policy "broken" (declared on BadController.handler), field "limit": must be an integer >= 1 or a function of the request, got 0',
    );
  });

  it('checks the defaults too', async () => {
    const error = (await start([], [{ algorithm: 'gcra', limit: 10, window: '1 week' as RateLimitDuration }])) as Error;
    expect(error.message).toMatch(/declared on RateLimitModule defaults\), field "window"/);
  });
});
