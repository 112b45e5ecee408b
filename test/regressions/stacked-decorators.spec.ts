import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitPolicy } from '../../lib/index.js';
import { RATE_LIMIT_POLICIES } from '../../lib/planning/metadata-keys.js';
import type { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

// Regression: @RateLimit was SetMetadata, so a second @RateLimit on the same class or handler replaced the
// first instead of adding to it.

const policy = (name: string, limit: number, window: RateLimitPolicy['window'] = '1m'): RateLimitPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit,
  window,
  key: 'ip',
});

@Controller('stacked')
@RateLimit(policy('class-a', 100))
@RateLimit(policy('class-b', 3))
class StackedController {
  @Get('class')
  classOnly() {
    return 'ok';
  }

  @Get('both')
  @RateLimit(policy('burst', 2, '1s'))
  @RateLimit([policy('sustained', 3, '1h'), policy('spare', 100, '1h')])
  both() {
    return 'ok';
  }
}

/** Class-level policies of a base class: for subclasses that declare none of their own. */
@RateLimit(policy('parent', 50))
class ParentController {
  @Get('x')
  x() {
    return 'ok';
  }
}

@Controller('heir')
class HeirController extends ParentController {}

@Controller('child')
@RateLimit(policy('child-a', 60))
@RateLimit(policy('child-b', 70))
class ChildController extends ParentController {}

const policyNames = (res: request.Response): string[] =>
  String(res.headers['ratelimit-policy'] ?? '')
    .split(', ')
    .filter(Boolean)
    .map((item) => nth(item.split(';'), 0));

describe.each(ADAPTERS)('stacked @RateLimit on %s', (adapter) => {
  let app: INestApplication;
  let clock: FakeClock;
  beforeEach(async () => {
    ({ app, clock } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [StackedController, HeirController, ChildController],
    }));
  });
  afterEach(() => app.close());

  const get = (path: string) => request(app.getHttpServer()).get(path);

  it('adds up stacked class decorators, in source order, each denying on its own limit', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await get('/stacked/class');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"class-a";q=100;w=60, "class-b";q=3;w=60');
    }
    const denied = await get('/stacked/class');
    expect(denied.status).toBe(429);
    expect(denied.body.policy).toBe('class-b');
  });

  it('adds up stacked handler decorators after the class ones, in source order, each denying on its own', async () => {
    const first = await get('/stacked/both');
    expect(first.status).toBe(200);
    expect(policyNames(first)).toEqual(['"class-a"', '"class-b"', '"burst"', '"sustained"', '"spare"']);
    expect((await get('/stacked/both')).status).toBe(200);
    const burst = await get('/stacked/both');
    expect(burst.status).toBe(429);
    expect(burst.body.policy).toBe('burst');

    clock.advance(1000); // a new burst window; 'sustained' has 1 of 3 left (the denied request consumed nothing)
    const third = await get('/stacked/both');
    expect(third.status).toBe(200);
    expect(third.headers['ratelimit']).toContain('"sustained";r=0;');
    const sustained = await get('/stacked/both');
    expect(sustained.status).toBe(429);
    expect(sustained.body.policy).toBe('sustained');
  });

  it("inherits a parent's class policies without its own @RateLimit; its own replace them", async () => {
    const heir = await get('/heir/x');
    expect(heir.headers['ratelimit-policy']).toBe('"parent";q=50;w=60');
    const child = await get('/child/x');
    expect(child.headers['ratelimit-policy']).toBe('"child-a";q=60;w=60, "child-b";q=70;w=60');
    // The subclass's decorators wrote their own metadata: the parent's array is as it was declared.
    const reflector = app.get(Reflector);
    expect(reflector.get<RateLimitPolicy[]>(RATE_LIMIT_POLICIES, ParentController)).toEqual([policy('parent', 50)]);
    expect(reflector.get<RateLimitPolicy[]>(RATE_LIMIT_POLICIES, ChildController)).toEqual([
      policy('child-a', 60),
      policy('child-b', 70),
    ]);
  });
});

describe('stacked @RateLimit with a duplicate name', () => {
  @Controller('dup')
  class DuplicateController {
    @Get()
    @RateLimit(policy('dup', 1))
    @RateLimit(policy('dup', 2))
    handler() {
      return 'never';
    }
  }

  it('stops the start with an error naming Class.method', async () => {
    const compiling = Test.createTestingModule({
      imports: [RateLimitModule.forRoot({})],
      controllers: [DuplicateController],
    }).compile();
    await expect(compiling).rejects.toThrow(
      'Invalid rate-limit policy "dup" (declared on DuplicateController.handler), field "name": ' +
        'is declared twice on the same target; names must be unique per route',
    );
  });
});
