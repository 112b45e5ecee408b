import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  UseGuards,
} from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitPolicy } from '../../lib/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

// Regression: plans were cached by handler function alone, so subclasses sharing an inherited handler shared
// the plan (class-level policies and state) of whichever controller was planned first.

const policy = (name: string, limit: number, key: RateLimitPolicy['key'] = 'ip'): RateLimitPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit,
  window: '1m',
  key,
});

/** A generic base controller, as users write them: its handlers are shared by every subclass. */
class CrudController {
  @Get('list')
  list() {
    return 'ok';
  }
}

@Controller('users')
@RateLimit(policy('users', 2))
class UsersController extends CrudController {}

@Controller('orders')
@RateLimit(policy('orders', 4))
class OrdersController extends CrudController {}

interface Req {
  headers: Record<string, string | undefined>;
  user?: { id: string };
}

/** Authenticates from `x-user`, after the global guard has run. */
class HeaderAuthGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<Req>();
    const id = req.headers['x-user'];
    if (id === undefined) return false;
    req.user = { id };
    return true;
  }
}

class ProfileController {
  @Get('me')
  me() {
    return 'ok';
  }
}

/** Its user-keyed policy waits for its own guard: the limiter attaches its interceptor to the shared handler. */
@Controller('members')
@UseGuards(HeaderAuthGuard)
@RateLimit(policy('members', 2, 'user'))
class MembersController extends ProfileController {}

/** Shares the handler, needs no deferral: the interceptor attached for MembersController passes it through. */
@Controller('guests')
@RateLimit(policy('guests', 3))
class GuestsController extends ProfileController {}

describe.each(ADAPTERS)('inherited handlers on %s', (adapter) => {
  let app: INestApplication;
  beforeEach(async () => {
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({})],
      controllers: [UsersController, OrdersController, MembersController, GuestsController],
    }));
  });
  afterEach(() => app.close());

  const get = (path: string, user?: string) => {
    const req = request(app.getHttpServer()).get(path);
    return user === undefined ? req : req.set('x-user', user);
  };

  it('plan each subclass with its own class-level policies and state', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await get('/users/list');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"users";q=2;w=60');
    }
    const users = await get('/users/list');
    expect(users.status).toBe(429);
    expect(users.body.policy).toBe('users');

    // The users' budget is spent; the orders' is untouched and has its own limit.
    for (let i = 0; i < 4; i++) {
      const res = await get('/orders/list');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"orders";q=4;w=60');
      expect(res.headers['ratelimit']).toMatch(new RegExp(`^"orders";r=${3 - i};t=\\d+$`));
    }
    const orders = await get('/orders/list');
    expect(orders.status).toBe(429);
    expect(orders.body.policy).toBe('orders');
  });

  it('defers only the subclass that needs it, on a handler both share', async () => {
    // Keyed by the user its own guard authenticates (not the IP): alice's denial leaves bob his budget.
    expect((await get('/members/me', 'alice')).status).toBe(200);
    expect((await get('/members/me', 'alice')).status).toBe(200);
    const alice = await get('/members/me', 'alice');
    expect(alice.status).toBe(429);
    expect(alice.body.policy).toBe('members');
    const bob = await get('/members/me', 'bob');
    expect(bob.status).toBe(200);
    expect(bob.headers['ratelimit']).toMatch(/^"members";r=1;t=\d+$/);
    expect((await get('/members/me')).status).toBe(403);

    // The same handler through the other class: its own policy, decided by the global guard, no guard of its own.
    for (let i = 0; i < 3; i++) {
      const res = await get('/guests/me');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"guests";q=3;w=60');
    }
    const guests = await get('/guests/me');
    expect(guests.status).toBe(429);
    expect(guests.body.policy).toBe('guests');
  });
});
