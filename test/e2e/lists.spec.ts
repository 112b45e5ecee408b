import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  Injectable,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimit,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitService,
  type RateLimitStoreItem,
  SkipRateLimit,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, type AdapterName, createApp } from '../support/nest-app.js';
import { alignedStart } from '../support/time.js';
import { perMinute } from '../support/policies.js';

interface Req {
  headers: Record<string, string | undefined>;
  user?: { id: string };
}
const req = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<Req>();
const header = (ctx: ExecutionContext, name: string) => req(ctx).headers[name];

/** A list function that fails, as a lookup whose backend is down would. */
const lookupDown = (): boolean => {
  throw new Error('lookup down');
};

/** The memory store, counting the calls that would reach a store (consume and refund). */
class CountingStore extends MemoryRateLimitStore {
  calls = 0;
  override async consume(items: readonly RateLimitStoreItem[]) {
    this.calls++;
    return super.consume(items);
  }
  override async refund(items: readonly RateLimitStoreItem[]) {
    this.calls++;
    return super.refund(items);
  }
}

@Controller()
class ListsController {
  @Get('limited')
  @RateLimit(perMinute('limited', 1))
  limited() {
    return 'ok';
  }

  @Get('three')
  @RateLimit([perMinute('one', 5), perMinute('two', 5), perMinute('three', 5)])
  three() {
    return 'ok';
  }

  @Get('partner')
  @RateLimit([
    perMinute('partner', 1, { allow: ['203.0.113.0/24', async (ctx) => header(ctx, 'x-partner') === 'yes'] }),
    perMinute('overall', 10),
  ])
  partner() {
    return 'ok';
  }

  @Get('signup')
  @RateLimit(
    perMinute('signup', 10, {
      deny: ['198.51.100.0/24', '2001:db8:bad::/48', async (ctx) => header(ctx, 'x-banned') === 'yes'],
    }),
  )
  signup() {
    return 'ok';
  }

  @Get('skipped')
  @SkipRateLimit()
  @RateLimit(perMinute('never', 1))
  skipped() {
    return 'ok';
  }

  @Get('free')
  free() {
    return 'ok';
  }
}

@Injectable()
class HeaderAuthGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const user = header(ctx, 'x-user');
    if (user === undefined) throw new UnauthorizedException();
    req(ctx).user = { id: user };
    return true;
  }
}

/** An 'ip' policy decided before authentication, and a user policy whose deny list reads the user. */
@Controller('me')
@UseGuards(HeaderAuthGuard)
class MeController {
  @Get()
  @RateLimit([
    perMinute('me-ip', 5),
    {
      name: 'me-user',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
      key: 'user',
      deny: [(ctx) => req(ctx).user?.id === 'mallory'],
    },
  ])
  me() {
    return 'ok';
  }
}

@Controller('fail')
class FailingListsController {
  @Get('open-deny')
  @RateLimit(perMinute('open-deny', 1, { failMode: 'open', deny: [lookupDown] }))
  openDeny() {
    return 'ok';
  }

  @Get('closed-deny')
  @RateLimit([
    perMinute('fine', 5),
    perMinute('closed-deny', 5, { failMode: 'closed', deny: [async () => lookupDown()] }),
  ])
  closedDeny() {
    return 'ok';
  }

  @Get('open-allow')
  @RateLimit(perMinute('open-allow', 1, { failMode: 'open', allow: [lookupDown] }))
  openAllow() {
    return 'ok';
  }

  @Get('closed-allow')
  @RateLimit(perMinute('closed-allow', 5, { failMode: 'closed', allow: [lookupDown] }))
  closedAllow() {
    return 'ok';
  }

  @Get('matched-anyway')
  @RateLimit(perMinute('matched-anyway', 1, { failMode: 'closed', allow: [lookupDown, () => true] }))
  matchedAnyway() {
    return 'ok';
  }

  @Get('denied-anyway')
  @RateLimit(perMinute('denied-anyway', 5, { failMode: 'closed', deny: [lookupDown, () => true] }))
  deniedAnyway() {
    return 'ok';
  }

  @Get('not-boolean')
  @RateLimit(perMinute('not-boolean', 1, { failMode: 'closed', deny: [() => 'yes' as unknown as boolean] }))
  notBoolean() {
    return 'ok';
  }
}

const FORBIDDEN = {
  statusCode: 403,
  error: 'Forbidden',
  code: 'RATE_LIMIT_DENY_LIST',
  message: 'Denied by the deny list',
};
const forbiddenBy = (policy: string) => ({ ...FORBIDDEN, message: `Denied by the deny list of policy "${policy}"` });

/** The module's lists of most tests: clients behind a loopback proxy, named by X-Forwarded-For. */
const LISTS: RateLimitModuleOptions = {
  trustProxy: 'loopback',
  allow: ['10.1.0.0/16', '2001:db8:a::1', '::ffff:10.9.0.0/112'],
  deny: ['192.0.2.0/24', '2001:db8:d::/48', '10.1.2.3'],
};

describe.each(ADAPTERS)('allow and deny lists on %s (memory store)', (adapter: AdapterName) => {
  let app: INestApplication | undefined;
  let store: CountingStore;
  let errors: [string, string][];
  const start = async (options: RateLimitModuleOptions, controllers: (new () => object)[] = [ListsController]) => {
    const clock = new FakeClock(alignedStart(60_000) + 60_000);
    store = new CountingStore({ clock });
    errors = [];
    ({ app } = await createApp(
      adapter,
      {
        imports: [
          RateLimitModule.forRoot({
            store,
            onError: (error, policy) => errors.push([error.message, policy]),
            ...options,
          }),
        ],
        controllers,
      },
      clock,
    ));
  };
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  const server = () => (app as INestApplication).getHttpServer();
  const get = (path: string, ip?: string, headers: Record<string, string> = {}) =>
    request(server())
      .get(path)
      .set(ip === undefined ? headers : { 'x-forwarded-for': ip, ...headers });
  const remaining = async (policy: string, key: string) =>
    (await (app as INestApplication).get(RateLimitService).peek(policy, key)).remaining;
  /** Closes the app before starting another in the same test. */
  const restart = async (options: RateLimitModuleOptions, controllers?: (new () => object)[]) => {
    await app?.close();
    app = undefined;
    await start(options, controllers);
  };

  const expectForbidden = (res: request.Response, body = FORBIDDEN) => {
    expect(res.status).toBe(403);
    expect(res.body).toEqual(body);
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
    expect(res.headers['retry-after']).toBeUndefined();
  };

  it('denies IPv4 addresses and CIDR ranges with 403, exact body, no headers, no store call', async () => {
    await start(LISTS);
    expectForbidden(await get('/limited', '192.0.2.200'));
    expectForbidden(await get('/three', '192.0.2.1'));
    expect(store.calls).toBe(0);
    // Outside the range: decided as usual.
    expect((await get('/limited', '192.0.3.1')).status).toBe(200);
    expect((await get('/limited', '192.0.3.1')).status).toBe(429);
    expect(store.calls).toBe(2);
  });

  it('lets allowed IPv4 clients through without a policy or a header, consuming nothing', async () => {
    await start(LISTS);
    for (let i = 0; i < 10; i++) {
      const res = await get('/three', '10.1.200.7');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
      expect(res.headers['ratelimit-policy']).toBeUndefined();
    }
    expect(store.calls).toBe(0);
    expect(await remaining('one', 'ip:10.1.200.7')).toBe(5);
  });

  it('matches IPv6 by the full address, not its /64 key: two addresses of one /64 differ', async () => {
    await start(LISTS);
    // 2001:db8:a::1 is allowed; 2001:db8:a::2 is not, though both are keyed by 2001:db8:a::/64.
    expect((await get('/limited', '2001:db8:a::2')).status).toBe(200);
    expect((await get('/limited', '2001:db8:a::2')).status).toBe(429);
    expect((await get('/limited', '2001:db8:a::3')).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await get('/limited', '2001:db8:a::1')).status).toBe(200);
    expect((await get('/limited', '2001:db8:a:0:0:0:0:1')).status).toBe(200);
    expect(await remaining('limited', 'ip:2001:db8:a::/64')).toBe(0);
    // An IPv6 CIDR: every address of 2001:db8:d::/48 is denied, across many /64s.
    expectForbidden(await get('/limited', '2001:db8:d:ffff::5'));
    expectForbidden(await get('/limited', '2001:db8:d::1'));
    expect((await get('/limited', '2001:db8:e::1')).status).toBe(200);
  });

  it('reads IPv4-mapped IPv6 as IPv4, for clients and for entries', async () => {
    await start(LISTS);
    expectForbidden(await get('/limited', '::ffff:192.0.2.9'));
    // '::ffff:10.9.0.0/112' names the IPv4 clients 10.9.0.0 to 10.9.255.255.
    for (let i = 0; i < 3; i++) expect((await get('/limited', '10.9.3.4')).status).toBe(200);
    expect((await get('/limited', '10.10.3.4')).status).toBe(200);
    expect((await get('/limited', '10.10.3.4')).status).toBe(429);
  });

  it("matches the client as 'ip' keys see it: the trusted hop of X-Forwarded-For, not a forged one", async () => {
    await start(LISTS);
    expectForbidden(await get('/limited', '192.0.2.5'));
    // 203.0.113.1 is not a proxy of ours, so what it forwards (a denied address) is not believed.
    const forged = await get('/limited', '192.0.2.5, 203.0.113.1');
    expect(forged.status).toBe(200);
    expect(await remaining('limited', 'ip:203.0.113.1')).toBe(0);
    // Without trustProxy the client is the socket (127.0.0.1), whatever X-Forwarded-For says.
    await restart({ allow: LISTS.allow, deny: LISTS.deny });
    expect((await get('/limited', '192.0.2.5')).status).toBe(200);
    expect(await remaining('limited', 'ip:127.0.0.1')).toBe(0);
    // Nor can a forged allowed address lift the limit.
    expect((await get('/limited', '10.1.7.7')).status).toBe(429);
  });

  it('checks deny before allow: an address on both lists is denied', async () => {
    await start(LISTS);
    // 10.1.2.3 is in the allowed 10.1.0.0/16 and on the deny list.
    expectForbidden(await get('/three', '10.1.2.3'));
    // A policy's deny list also wins over the module's allow list.
    await restart({ ...LISTS, allow: ['198.51.100.0/24'] });
    expectForbidden(await get('/signup', '198.51.100.7'), forbiddenBy('signup'));
    expect((await get('/three', '198.51.100.7')).status).toBe(200);
    expect(store.calls).toBe(0);
  });

  it("a policy's allow list skips that policy only; the others are decided", async () => {
    await start({ trustProxy: 'loopback' });
    for (let i = 1; i <= 3; i++) {
      const res = await get('/partner', '203.0.113.9');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"overall";q=10;w=60');
      expect(res.headers['ratelimit']).toBe(`"overall";r=${10 - i};t=60`);
    }
    expect(await remaining('partner', 'ip:203.0.113.9')).toBe(1);
    // An async function of the request: the partner header.
    for (let i = 0; i < 3; i++) expect((await get('/partner', '203.0.114.2', { 'x-partner': 'yes' })).status).toBe(200);
    expect(await remaining('partner', 'ip:203.0.114.2')).toBe(1);
    expect(await remaining('overall', 'ip:203.0.114.2')).toBe(7);
    // Not listed: both policies apply.
    expect((await get('/partner', '203.0.114.1')).status).toBe(200);
    const limited = await get('/partner', '203.0.114.1');
    expect(limited.status).toBe(429);
    expect(limited.body.policy).toBe('partner');
  });

  it("a policy's deny list denies where that policy runs, and nowhere else; nothing is consumed", async () => {
    await start({ trustProxy: 'loopback' });
    expectForbidden(await get('/signup', '198.51.100.7'), forbiddenBy('signup'));
    expectForbidden(await get('/signup', '2001:db8:bad:1::1'), forbiddenBy('signup'));
    // An async function of the request.
    expectForbidden(await get('/signup', '203.0.113.20', { 'x-banned': 'yes' }), forbiddenBy('signup'));
    expect(store.calls).toBe(0);
    expect(await remaining('signup', 'ip:203.0.113.20')).toBe(10);
    expect((await get('/signup', '203.0.113.20')).status).toBe(200);
    // The same client on a route without that policy.
    expect((await get('/limited', '198.51.100.7')).status).toBe(200);
  });

  it('lists apply only where a policy would run: not under @SkipRateLimit(), not on routes without policies', async () => {
    await start({ trustProxy: 'loopback', deny: ['0.0.0.0/0', '::/0'] });
    expect((await get('/skipped', '203.0.113.1')).status).toBe(200);
    expect((await get('/free', '203.0.113.1')).status).toBe(200);
    expectForbidden(await get('/limited', '203.0.113.1'));
    expectForbidden(await get('/limited', '2001:db8::1'));
  });

  it("a skipped default's lists do not apply; the route's own policies' do", async () => {
    @Controller()
    class DefaultsController {
      @Get('plain')
      plain() {
        return 'ok';
      }

      @Get('own')
      @SkipRateLimit('per-ip')
      @RateLimit(perMinute('own', 5))
      own() {
        return 'ok';
      }
    }
    await start({ trustProxy: 'loopback', defaults: [perMinute('per-ip', 100, { deny: ['198.51.100.0/24'] })] }, [
      DefaultsController,
    ]);
    expectForbidden(await get('/plain', '198.51.100.1'), forbiddenBy('per-ip'));
    const own = await get('/own', '198.51.100.1');
    expect(own.status).toBe(200);
    expect(own.headers['ratelimit']).toBe('"own";r=4;t=60');
  });

  it('a module allow skips every policy, user-keyed ones waiting for authentication included', async () => {
    await start(LISTS, [MeController]);
    const res = await get('/me', '10.1.5.5', { 'x-user': 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(store.calls).toBe(0);
    // Authentication still runs: an allowed client without credentials is rejected by it, not by the limiter.
    expect((await get('/me', '10.1.5.5')).status).toBe(401);
  });

  it('deny lists of policies that wait for authentication see the user; what was consumed before is given back', async () => {
    await start({ ...LISTS }, [MeController]);
    const alice = await get('/me', '203.0.113.50', { 'x-user': 'alice' });
    expect(alice.status).toBe(200);
    expect(alice.headers['ratelimit']).toBe('"me-ip";r=4;t=60, "me-user";r=4;t=60');
    expectForbidden(await get('/me', '203.0.113.50', { 'x-user': 'mallory' }), forbiddenBy('me-user'));
    // The 'ip' unit the global guard took before authentication was refunded.
    expect(await remaining('me-ip', 'ip:203.0.113.50')).toBe(4);
    expect(await remaining('me-user', 'user:mallory')).toBe(5);
    // Deny before allow across both decision points: the module allows 10.1.0.0/16, the user is denied.
    expectForbidden(await get('/me', '10.1.5.5', { 'x-user': 'mallory' }), forbiddenBy('me-user'));
  });

  it('100 concurrent denied requests: all 403, no store call; 200 others at limit 100: exactly 100 admitted', async () => {
    await start({ deny: ['127.0.0.0/8'] });
    const denied = await Promise.all(Array.from({ length: 100 }, () => get('/three')));
    expect(denied.map((r) => r.status)).toEqual(Array(100).fill(403));
    expect(store.calls).toBe(0);
    @Controller()
    class FloodController {
      @Get('flood')
      @RateLimit(perMinute('flood', 100, { deny: ['192.0.2.0/24'], allow: [async () => false] }))
      flood() {
        return 'ok';
      }
    }
    await restart({ allow: ['10.0.0.0/8'], deny: ['198.51.100.0/24'] }, [FloodController]);
    const statuses = (await Promise.all(Array.from({ length: 200 }, () => get('/flood')))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);
  });

  describe('list functions that fail', () => {
    it.each([
      { list: 'deny', policy: 'open-deny' },
      { list: 'allow', policy: 'open-allow' },
    ])(
      'fail open: a throwing $list function is as if not listed (the policy applies), and is reported with its policy',
      async ({ policy }) => {
        await start({}, [FailingListsController]);
        expect((await get(`/fail/${policy}`)).status).toBe(200);
        expect((await get(`/fail/${policy}`)).status).toBe(429);
        expect(errors).toEqual([
          ['lookup down', policy],
          ['lookup down', policy],
        ]);
      },
    );

    it('fail closed: a throwing (or rejecting) function answers 503 as a store outage, consuming nothing', async () => {
      await start({}, [FailingListsController]);
      for (const [path, policy] of [
        ['/fail/closed-deny', 'closed-deny'],
        ['/fail/closed-allow', 'closed-allow'],
      ] as const) {
        const res = await get(path);
        expect(res.status).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.body).toEqual({
          statusCode: 503,
          error: 'Service Unavailable',
          code: 'RATE_LIMIT_UNAVAILABLE',
          message: `Rate limiter unavailable; policy "${policy}" fails closed`,
          policy,
          retryAfter: 1,
        });
      }
      expect(store.calls).toBe(0);
      expect(errors).toEqual([
        ['lookup down', 'closed-deny'],
        ['lookup down', 'closed-allow'],
      ]);
    });

    it("a failure that cannot change the outcome (another entry matched) is reported, not the fail mode's", async () => {
      await start({}, [FailingListsController]);
      for (let i = 0; i < 3; i++) expect((await get('/fail/matched-anyway')).status).toBe(200);
      expectForbidden(await get('/fail/denied-anyway'), forbiddenBy('denied-anyway'));
      expect(store.calls).toBe(0);
      expect(errors).toEqual([...Array(3).fill(['lookup down', 'matched-anyway']), ['lookup down', 'denied-anyway']]);
    });

    it('a function that returns something other than a boolean is a failure of its policy', async () => {
      await start({}, [FailingListsController]);
      expect((await get('/fail/not-boolean')).status).toBe(503);
      expect(errors).toEqual([
        [
          'Invalid rate-limit policy "not-boolean" (declared on FailingListsController.notBoolean), field "deny": a function of the deny list returned string; it must return true or false (or a Promise of one)',
          'not-boolean',
        ],
      ]);
    });

    it("a module list's failure is a failure of every policy of the route: their fail modes apply", async () => {
      await start({ allow: [lookupDown] });
      const open = await get('/three');
      expect(open.status).toBe(200);
      expect(open.headers['ratelimit']).toBe('"one";r=4;t=60, "two";r=4;t=60, "three";r=4;t=60');
      expect(errors).toEqual([
        ['lookup down', 'one'],
        ['lookup down', 'two'],
        ['lookup down', 'three'],
      ]);
      await restart({ deny: [async () => lookupDown()], failMode: 'closed' });
      const closed = await get('/three');
      expect(closed.status).toBe(503);
      expect(closed.body.policy).toBe('one');
      expect(store.calls).toBe(0);
    });
  });

  describe('start-up validation', () => {
    it('a malformed entry in a handler policy stops the start, naming the policy, Class.method and the field', async () => {
      @Controller()
      class BadCidrController {
        @Get()
        @RateLimit(perMinute('bad-cidr', 1, { deny: ['10.0.0.0/8', '10.0.0.0/33'] }))
        handle() {
          return 'never';
        }
      }
      await expect(start({}, [BadCidrController])).rejects.toThrow(
        'Invalid rate-limit policy "bad-cidr" (declared on BadCidrController.handle), field "deny": entry 1, "10.0.0.0/33", has a bad prefix length: an IPv4 CIDR range takes /0 to /32',
      );
    });

    it('a class-level policy is reported at the first handler it applies to', async () => {
      @Controller()
      @RateLimit(perMinute('bad-class', 1, { allow: ['not-an-ip'] }))
      class BadClassController {
        @Get('x')
        first() {
          return 'never';
        }
      }
      await expect(start({}, [BadClassController])).rejects.toThrow(
        'Invalid rate-limit policy "bad-class" (declared on BadClassController.first), field "allow": entry 0, "not-an-ip", is not an IP address or CIDR range',
      );
    });

    it("the module's own lists and its defaults' are checked too", async () => {
      await expect(start({ deny: ['192.0.2.0/24', 'not-an-ip'] })).rejects.toThrow(
        'nest-rate-limit: option "deny": entry 1, "not-an-ip", is not an IP address or CIDR range',
      );
      await expect(start({ allow: '10.0.0.0/8' as unknown as string[] })).rejects.toThrow(
        'nest-rate-limit: option "allow": must be an array of client addresses, CIDR ranges',
      );
      await expect(start({ defaults: [perMinute('per-ip', 10, { allow: ['2001:db8::/129'] })] })).rejects.toThrow(
        'Invalid rate-limit policy "per-ip" (declared on RateLimitModule defaults), field "allow": entry 0, "2001:db8::/129", has a bad prefix length',
      );
    });
  });
});
