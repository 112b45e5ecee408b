import { request as httpRequest } from 'node:http';
import type { Server } from 'node:net';

import {
  type ArgumentsHost,
  Body,
  Catch,
  Controller,
  type ExceptionFilter,
  type INestApplication,
  Post,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import request from 'supertest';

import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { STORES, type StoreName, storeOptions, storeServers } from '../support/store-options.js';
import {
  AuthController,
  checkCredentials,
  type Credentials,
  FIFTEEN_MINUTES_MS,
  holds,
  LOGIN,
  observed,
} from './fixtures.js';

const servers = storeServers();

// 200 concurrent requests queue for the pool's 20 connections: past the default 100 ms, a wait would count as a
// store failure and the fail mode (open) would let requests through uncharged.
const optionsOf = (store: StoreName): RateLimitModuleOptions => ({
  ...storeOptions(store, servers),
  ...(store === 'postgres' ? { timeout: 5000 } : {}),
});

let accounts = 0;
/** A fresh account per test: every policy is keyed by it. */
const newAccount = (): string => `user${++accounts}`;

type Body = { account: string; password?: string };
const post = (app: INestApplication, path: string, body: Body) =>
  request(app.getHttpServer() as Server)
    .post(path)
    .send(body);

/** Status codes and how many responses had each. */
function tally(responses: readonly { status: number }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of responses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/** Units left for an account under a policy, as the store has them once the refunds under way are done. */
async function remaining(app: INestApplication, policy: string, account: string): Promise<number> {
  await app.get(RateLimiter).refundsSettled();
  return (await app.get(RateLimitService).peek(policy, `account:${account}`)).remaining;
}

/** Several attempts, one after the other; returns their statuses. */
async function attempts(app: INestApplication, path: string, account: string, passwords: (string | undefined)[]) {
  const statuses: number[] = [];
  for (const password of passwords) statuses.push((await post(app, path, { account, password })).status);
  return statuses;
}

describe.each(STORES)('counting by outcome on the %s store', (store) => {
  describe.each(ADAPTERS)('through HTTP on %s', (adapter) => {
    let app: INestApplication;
    let clock: FakeClock;
    /** Store failures: none may happen here, or fail modes would decide instead of the store. */
    const failures: string[] = [];
    beforeAll(async () => {
      ({ app, clock } = await createApp(adapter, {
        imports: [
          RateLimitModule.forRoot({
            ...optionsOf(store),
            onError: (e, policy) => failures.push(`${policy}: ${e.message}`),
          }),
        ],
        controllers: [AuthController],
      }));
      await app.listen(0, '127.0.0.1');
    });
    afterEach(() => expect(failures).toEqual([]));
    afterAll(() => app.close());

    it("'failed': 200 concurrent failed logins at 5 per account are charged exactly 5 times", async () => {
      const account = newAccount();
      const responses = await Promise.all(
        Array.from({ length: 200 }, () => post(app, '/auth/login', { account, password: 'wrong' })),
      );
      expect(tally(responses)).toEqual({ 401: 5, 429: 195 });
      expect(await remaining(app, 'login', account)).toBe(0);
      // The right password now: the budget is spent, whatever this attempt would have done.
      expect((await post(app, '/auth/login', { account, password: 'right' })).status).toBe(429);
      expect(await remaining(app, 'login', account)).toBe(0);
    });

    it("'failed': a successful login is given back, so 4 failures and a success leave 1 attempt", async () => {
      const account = newAccount();
      expect(await attempts(app, '/auth/login', account, ['wrong', 'wrong', 'wrong', 'wrong', 'right'])).toEqual([
        401, 401, 401, 401, 201,
      ]);
      expect(await remaining(app, 'login', account)).toBe(1);
      expect(await attempts(app, '/auth/login', account, ['wrong', 'wrong', 'right'])).toEqual([401, 429, 429]);
      expect(await remaining(app, 'login', account)).toBe(0);
    });

    it("'failed': a handler that throws (500) is a failure and keeps its charge", async () => {
      const account = newAccount();
      expect(await attempts(app, '/auth/login', account, ['crash', 'right'])).toEqual([500, 201]);
      expect(await remaining(app, 'login', account)).toBe(4);
    });

    it('an exhausted budget denies even a request that would succeed, until the window has passed', async () => {
      const account = newAccount();
      expect(await attempts(app, '/auth/login', account, Array(5).fill('wrong'))).toEqual(Array(5).fill(401));
      const denied = await post(app, '/auth/login', { account, password: 'right' });
      expect(denied.status).toBe(429);
      expect(denied.body).toMatchObject({ code: 'RATE_LIMITED', policy: 'login', retryAfter: 900 });
      clock.advance(FIFTEEN_MINUTES_MS - 1);
      expect((await post(app, '/auth/login', { account, password: 'right' })).status).toBe(429);
      clock.advance(1);
      expect(await remaining(app, 'login', account)).toBe(5);
      expect(await attempts(app, '/auth/login', account, ['right', 'right', 'wrong'])).toEqual([201, 201, 401]);
      expect(await remaining(app, 'login', account)).toBe(4);
    });

    it("'succeeded': failures are given back, successes count", async () => {
      const account = newAccount();
      const statuses = await attempts(app, '/auth/reset', account, ['wrong', 'right', undefined, 'right', 'crash']);
      expect(statuses).toEqual([401, 201, 400, 201, 500]);
      expect(await remaining(app, 'reset', account)).toBe(1);
      expect(await attempts(app, '/auth/reset', account, ['right', 'wrong', 'right'])).toEqual([201, 429, 429]);
      expect(await remaining(app, 'reset', account)).toBe(0);
    });

    it("'succeeded': 200 concurrent successes at 3 per account admit exactly 3", async () => {
      const account = newAccount();
      const responses = await Promise.all(
        Array.from({ length: 200 }, () => post(app, '/auth/reset', { account, password: 'right' })),
      );
      expect(tally(responses)).toEqual({ 201: 3, 429: 197 });
      expect(await remaining(app, 'reset', account)).toBe(0);
    });

    it('a count function of the status: only 401s count; a 400, a 500 and a success are given back', async () => {
      const account = newAccount();
      const statuses = await attempts(app, '/auth/strict', account, [undefined, 'crash', 'right', 'wrong', 'wrong']);
      expect(statuses).toEqual([400, 500, 201, 401, 401]);
      expect(await remaining(app, 'strict', account)).toBe(1);
    });

    it('a count function is shown the status, what the handler threw and the context', async () => {
      const account = newAccount();
      expect(await attempts(app, '/auth/observed', account, ['right', 'wrong'])).toEqual([201, 401]);
      expect(await remaining(app, 'observed', account)).toBe(9);
      const seen = observed.get(account) ?? [];
      const success = nth(seen, 0);
      const failure = nth(seen, 1);
      expect(Object.keys(success).sort()).toEqual(['context', 'status']);
      expect(success.status).toBe(201);
      expect(success.context.getHandler().name).toBe('observed');
      expect(failure.status).toBe(401);
      expect(failure.error).toMatchObject({ message: 'bad credentials' });
    });

    it('a refusal by a route guard after admission is a failed outcome too (status 401)', async () => {
      const account = newAccount();
      expect(await attempts(app, '/auth/guarded', account, ['wrong', 'right', 'wrong', 'right'])).toEqual([
        401, 201, 401, 201,
      ]);
      expect(await remaining(app, 'guarded', account)).toBe(3);
    });

    it('a request denied by another policy consumed nothing, and nothing is refunded for it', async () => {
      const account = newAccount();
      // 'pair-ip' allows 3 per IP (this test's client): 2 successes counted, then 1 failure given back.
      expect(await attempts(app, '/auth/pair', account, ['right', 'right', 'wrong'])).toEqual([201, 201, 401]);
      expect(await remaining(app, 'pair-ok', account)).toBe(8);
      // Denied by 'pair-ip': a 429, which 'succeeded' would give back had it been charged.
      const denied = await post(app, '/auth/pair', { account, password: 'right' });
      expect(denied.status).toBe(429);
      expect(denied.body).toMatchObject({ policy: 'pair-ip' });
      expect(await remaining(app, 'pair-ok', account)).toBe(8);
    });

    it('a charge refunded because a later policy denied is not refunded again when the request ends', async () => {
      const account = newAccount();
      const as = (user: string) =>
        request(app.getHttpServer() as Server)
          .post('/auth/deferred')
          .set('x-user', user)
          .send({ account, password: 'right' });
      expect((await as(`${account}-a`)).status).toBe(201);
      expect((await as(`${account}-b`)).status).toBe(201);
      expect(await remaining(app, 'deferred-ok', account)).toBe(8);
      // The account's unit is charged by the global guard, then given back when 'deferred-user' denies.
      const denied = await as(`${account}-a`);
      expect(denied.status).toBe(429);
      expect(denied.body).toMatchObject({ policy: 'deferred-user' });
      expect(await remaining(app, 'deferred-ok', account)).toBe(8);
      // Refused by the route's authentication: charged by the global guard, a failure, so given back.
      const anonymous = await post(app, '/auth/deferred', { account, password: 'right' });
      expect(anonymous.status).toBe(401);
      expect(await remaining(app, 'deferred-ok', account)).toBe(8);
    });

    it('a client that leaves before its response is ended keeps the charge, whatever the handler then does', async () => {
      const account = newAccount();
      const server = app.getHttpServer() as Server;
      const { port } = server.address() as { port: number };
      const abandon = async (path: string, password: string): Promise<void> => {
        const held = holds.hold(account);
        const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST' });
        req.on('error', () => undefined);
        req.setHeader('content-type', 'application/json');
        req.end(JSON.stringify({ account, password }));
        const socket = await held.reached;
        if (socket === undefined) throw new Error('the handler was given no socket');
        const left = new Promise((resolve) => socket.once('close', resolve));
        req.destroy();
        // The response closes with the socket: only then does the handler go on (and try to answer).
        await left;
        held.release();
      };
      // A success under 'failed' would be given back, a failure under 'succeeded' too: neither was seen.
      await abandon('/auth/login', 'right');
      await abandon('/auth/reset', 'wrong');
      expect(await remaining(app, 'login', account)).toBe(4);
      expect(await remaining(app, 'reset', account)).toBe(2);
    });

    it('a success whose window ended while it ran is not given back to the next window', async () => {
      const account = newAccount();
      clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 30_000);
      const held = holds.hold(account);
      const slow = post(app, '/auth/window', { account, password: 'right' }).then((r) => r.status);
      await held.reached;
      clock.advance(60_000);
      expect((await post(app, '/auth/window', { account, password: 'wrong' })).status).toBe(401);
      held.release();
      expect(await slow).toBe(201);
      // Charged in the window before: a refund now would free the unit of this window's failure.
      expect(await remaining(app, 'window', account)).toBe(2);
      // Within one window, a success is given back.
      expect(await attempts(app, '/auth/window', account, ['right', 'wrong'])).toEqual([201, 401]);
      expect(await remaining(app, 'window', account)).toBe(1);
    });
  });
});

describe('when counting goes wrong (memory store, Express)', () => {
  let app: INestApplication;
  const errors: { error: Error; policy: string }[] = [];
  beforeAll(async () => {
    ({ app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ onError: (error, policy) => errors.push({ error, policy }) })],
      controllers: [AuthController],
    }));
  });
  afterAll(() => app.close());

  it('a count function that throws keeps the charge and is reported, naming the policy and the field', async () => {
    const account = newAccount();
    expect(await attempts(app, '/auth/throwing-count', account, ['right', 'wrong', 'wrong'])).toEqual([201, 401, 401]);
    expect(await remaining(app, 'throwing-count', account)).toBe(8);
    expect(errors.map((e) => e.policy)).toEqual(['throwing-count', 'throwing-count']);
    expect(errors[0]?.error.name).toBe('RateLimitPolicyError');
    expect(errors[0]?.error.message).toBe(
      'Invalid rate-limit policy "throwing-count" (declared on AuthController.throwingCount), field "count": ' +
        'the count function failed, so the charge is kept: count function bug',
    );
  });
});

describe('on Redis, when the outcome comes after other requests', () => {
  let app: INestApplication;
  const errors: { error: Error; policy: string }[] = [];
  beforeAll(async () => {
    ({ app } = await createApp('express', {
      imports: [
        RateLimitModule.forRoot({
          ...optionsOf('redis'),
          onError: (error, policy) => errors.push({ error, policy }),
        }),
      ],
      controllers: [AuthController],
    }));
    await app.listen(0, '127.0.0.1');
  });
  afterAll(() => app.close());

  it('a denial cached while the last unit was charged does not outlive the refund of that unit', async () => {
    const account = newAccount();
    expect(await attempts(app, '/auth/login', account, Array(4).fill('wrong'))).toEqual(Array(4).fill(401));
    const held = holds.hold(account);
    const success = post(app, '/auth/login', { account, password: 'right' }).then((r) => r.status);
    await held.reached;
    // The fifth unit is taken: Redis denies, and the denial is cached for its retry-after (15 minutes).
    expect(await attempts(app, '/auth/login', account, ['wrong', 'wrong'])).toEqual([429, 429]);
    held.release();
    expect(await success).toBe(201);
    expect(await remaining(app, 'login', account)).toBe(1);
    expect(await attempts(app, '/auth/login', account, ['wrong', 'wrong'])).toEqual([401, 429]);
  });

  it('a refund the store refuses leaves the charge (under-admission only) and is reported', async () => {
    const account = newAccount();
    const admin = servers.redis.client();
    const held = holds.hold(account);
    const success = post(app, '/auth/login', { account, password: 'right' }).then((r) => r.status);
    await held.reached;
    errors.length = 0;
    // Redis refuses every write above maxmemory: the refund of this success will fail.
    await admin.config('SET', 'maxmemory', '1');
    try {
      held.release();
      expect(await success).toBe(201);
      await app.get(RateLimiter).refundsSettled();
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect(errors.map((e) => e.policy)).toEqual(['login']);
    expect(errors[0]?.error.message).toMatch(/OOM/);
    expect(await remaining(app, 'login', account)).toBe(4);
  });
});

const DEFAULT_FAILURES: RateLimitPolicy = {
  name: 'failures',
  algorithm: 'fixed-window',
  limit: 10,
  window: '1h',
  key: 'ip',
  count: 'failed',
};

@Controller('layered')
class LayeredController {
  /** Inherits the default 'failures'. */
  @Post('inherits')
  inherits() {
    throw new Error('fails');
  }

  /** Replaces 'failures' by name with a policy that counts everything. */
  @Post('replaces')
  @RateLimit({ ...DEFAULT_FAILURES, limit: 10, count: 'all' })
  replaces() {
    return 'ok';
  }

  /** Stacked decorators: each policy keeps its own rule. */
  @Post('stacked')
  @RateLimit({ name: 'stacked-ok', algorithm: 'fixed-window', limit: 10, window: '1h', key: 'ip', count: 'succeeded' })
  @RateLimit({ name: 'stacked-all', algorithm: 'fixed-window', limit: 10, window: '1h', key: 'ip' })
  stacked() {
    return 'ok';
  }
}

describe('count through layering (defaults, replacement by name, stacked decorators)', () => {
  let app: INestApplication;
  beforeAll(async () => {
    ({ app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ defaults: [DEFAULT_FAILURES] })],
      controllers: [LayeredController],
    }));
  });
  afterAll(() => app.close());

  const left = async (policy: string): Promise<number> => {
    await app.get(RateLimiter).refundsSettled();
    return (await app.get(RateLimitService).peek(policy, 'ip:127.0.0.1')).remaining;
  };
  const call = async (path: string) => (await request(app.getHttpServer() as Server).post(path)).status;

  it('a default keeps its count on the routes it applies to; a replacement by name brings its own', async () => {
    expect(await call('/layered/inherits')).toBe(500);
    expect(await left('failures')).toBe(9);
    // 'all' on this route: its successes count against the same budget.
    expect(await call('/layered/replaces')).toBe(201);
    expect(await left('failures')).toBe(8);
    // The successes of the stacked route count under 'stacked-ok' and 'stacked-all', and not under the default.
    expect(await call('/layered/stacked')).toBe(201);
    expect([await left('failures'), await left('stacked-ok'), await left('stacked-all')]).toEqual([8, 9, 9]);
  });
});

@Controller('bad')
class BadCountController {
  @Post('login')
  @RateLimit({ ...DEFAULT_FAILURES, name: 'bad-count', count: 'failures' as 'failed' })
  login() {
    return 'never';
  }
}

describe('start-up validation of count', () => {
  it('a count that is not a rule stops the start, naming Controller.handler, the policy and the field', async () => {
    await expect(
      createApp('express', { imports: [RateLimitModule.forRoot({})], controllers: [BadCountController] }),
    ).rejects.toThrow(
      'Invalid rate-limit policy "bad-count" (declared on BadCountController.login), field "count": ' +
        `must be 'all', 'failed', 'succeeded' or a function of the outcome, got "failures"`,
    );
  });
});

@Controller('own-guard')
@UseGuards(RateLimitGuard)
class OwnGuardController {
  @Post('login')
  @RateLimit(LOGIN)
  login(@Body() credentials: Credentials) {
    return checkCredentials(credentials);
  }
}

describe('with global: false and RateLimitGuard placed by the application', () => {
  let app: INestApplication;
  beforeAll(async () => {
    ({ app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ global: false })],
      controllers: [OwnGuardController],
    }));
  });
  afterAll(() => app.close());

  it('counts by outcome all the same', async () => {
    const account = newAccount();
    expect(await attempts(app, '/own-guard/login', account, ['wrong', 'right', 'crash'])).toEqual([401, 201, 500]);
    expect(await remaining(app, 'login', account)).toBe(3);
  });
});

/** Answers every error with 200 and a body that says so, as some APIs do. */
@Catch()
class ErrorsAsOkFilter implements ExceptionFilter {
  catch(_error: unknown, host: ArgumentsHost): void {
    host.switchToHttp().getResponse<{ status(code: number): { json(body: unknown): void } }>().status(200).json({
      ok: false,
    });
  }
}

const BY_STATUS = { algorithm: 'fixed-window', limit: 5, window: '1h', key: 'ip' } as const;

@Controller('by-status')
@UseFilters(ErrorsAsOkFilter)
class ByStatusController {
  @Post('failed')
  @RateLimit({ ...BY_STATUS, name: 'by-status-failed', count: 'failed' })
  failed() {
    throw new Error('answered with 200 by the filter');
  }

  @Post('function')
  @RateLimit({ ...BY_STATUS, name: 'by-status-function', count: (outcome) => 'error' in outcome })
  judged() {
    throw new Error('answered with 200 by the filter');
  }
}

describe("HTTP: 'failed' and 'succeeded' go by the response's status; a count function also sees the error", () => {
  let app: INestApplication;
  beforeAll(async () => {
    ({ app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({})],
      controllers: [ByStatusController],
    }));
  });
  afterAll(() => app.close());

  /** Units left under a policy for this test's client (both policies are keyed by its IP). */
  const left = async (policy: string) => {
    await app.get(RateLimiter).refundsSettled();
    return (await app.get(RateLimitService).peek(policy, 'ip:127.0.0.1')).remaining;
  };

  it("'failed' needs no interceptor (Nest's chain costs every request); a count function has one", () => {
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, ByStatusController.prototype.failed)).toBeUndefined();
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, ByStatusController.prototype.judged)).toHaveLength(1);
  });

  it("an error a filter of the application answers with 200 is a success for 'failed', a failure for a function", async () => {
    const server = app.getHttpServer() as Server;
    expect((await request(server).post('/by-status/failed')).status).toBe(200);
    expect(await left('by-status-failed')).toBe(5);
    expect((await request(server).post('/by-status/function')).status).toBe(200);
    expect(await left('by-status-function')).toBe(4);
  });
});
