import { jest } from '@jest/globals';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  type INestApplication,
  Module,
  type Provider,
  type Type,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import type { ThrottlerModuleOptions } from '@nestjs/throttler';
import request from 'supertest';

import {
  RATE_LIMIT_CLOCK,
  RateLimit,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitPolicy,
  type RateLimitWindowPolicy,
  SkipRateLimit,
} from '../../lib/index.js';
import { throttler } from '../support/throttler-under-jest.js';
import { alignedStart } from '../support/time.js';

const { SkipThrottle, Throttle, ThrottlerGuard, ThrottlerModule } = throttler;

// Issue 19: docs/migration-from-throttler.md says how to port an app from @nestjs/throttler 6. Each case here
// runs one sequence of requests against an app on @nestjs/throttler (ThrottlerModule.forRoot, ThrottlerGuard as
// APP_GUARD, its in-memory storage) and against the same app ported as the guide says (RateLimitModule on the
// memory store), both on Express, and requires the same statuses, the same throttler (policy) named by each
// denial, and the same Retry-After within a second. The throttler's answers are written out too (the random
// sequences require 30 denials instead), so that no case passes by both apps admitting everything. The last
// cases check the filter that takes the place of throttler's `errorMessage`.
//
// One fake time drives both: Jest's fake timers replace Date (throttler's storage reads Date.now(), and sweeps
// with setInterval) and the module's clock reads Date.now(). nextTick, setImmediate and queueMicrotask stay
// real, for the HTTP servers and supertest. Nothing sleeps: requests take no fake time.

/** A minute boundary since the epoch: clock-aligned windows of 1 s, 10 s and 1 min all start here. */
const EDGE = alignedStart(60_000) + 60_000;

/** What the filter below uses of Express's response (the repository has no @types/express). */
interface ExpressResponse {
  status(code: number): { json(body: unknown): void };
}

/** The module's clock, on the fake time throttler sees. */
const fakeTime = { now: () => Date.now() };

/**
 * A request at `at` ms after the start, and what the throttler app answers: '200', or '429 <throttler that
 * denied> <Retry-After>'.
 */
type Step = readonly [at: number, path: string, throttlerAnswers: string];

interface Seen {
  readonly status: number;
  /** Which throttler or policy denied: the suffix of throttler's Retry-After-<name>, the body's `policy` here. */
  readonly by?: string;
  readonly retryAfter?: number;
}

function throttlerSaw(res: request.Response): Seen {
  if (res.status !== 429) return { status: res.status };
  // Throttler names the denying throttler in the header: Retry-After for 'default', Retry-After-<name> else.
  const header = Object.keys(res.headers).find((name) => name === 'retry-after' || name.startsWith('retry-after-'));
  if (header === undefined) return { status: res.status };
  const by = header === 'retry-after' ? 'default' : header.slice('retry-after-'.length);
  return { status: res.status, by, retryAfter: Number(res.headers[header]) };
}

function portSaw(res: request.Response): Seen {
  if (res.status !== 429) return { status: res.status };
  const retryAfter = res.headers['retry-after'];
  return {
    status: res.status,
    by: (res.body as { policy?: string }).policy,
    ...(retryAfter === undefined ? {} : { retryAfter: Number(retryAfter) }),
  };
}

const answer = (seen: Seen) => [seen.status, seen.by, seen.retryAfter].filter((part) => part !== undefined).join(' ');

async function started(app: INestApplication): Promise<INestApplication> {
  await app.init();
  return app;
}

async function throttlerApp(options: ThrottlerModuleOptions, controllers: Type[]): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [ThrottlerModule.forRoot(options)],
    controllers,
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  }).compile();
  return started(moduleRef.createNestApplication(new ExpressAdapter(), { logger: false }));
}

async function portedApp(
  options: RateLimitModuleOptions,
  controllers: Type[],
  more: { imports?: Type[]; providers?: Provider[]; prepare?: (app: INestApplication) => void } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options), ...(more.imports ?? [])],
    controllers,
    providers: more.providers ?? [],
  })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(fakeTime)
    .compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  more.prepare?.(app);
  return started(app);
}

/**
 * Sends each step's request to both apps at the same fake instant, `start + at`, and returns what each
 * answered, one line per step. The port's Retry-After is written as the throttler's when they are within a
 * second of each other (what the guide promises), so that the lines compare as they are.
 */
async function replay(apps: { throttler: INestApplication; ported: INestApplication }, start: number, steps: Step[]) {
  const throttlerLines: string[] = [];
  const portLines: string[] = [];
  for (const [at, path] of steps) {
    jest.advanceTimersByTime(start + at - Date.now());
    const fromThrottler = throttlerSaw(await request(apps.throttler.getHttpServer()).get(path));
    const fromPort = portSaw(await request(apps.ported.getHttpServer()).get(path));
    const close =
      fromThrottler.retryAfter !== undefined &&
      fromPort.retryAfter !== undefined &&
      Math.abs(fromThrottler.retryAfter - fromPort.retryAfter) <= 1;
    throttlerLines.push(`${at} ${path} ${answer(fromThrottler)}`);
    portLines.push(`${at} ${path} ${answer(close ? { ...fromPort, retryAfter: fromThrottler.retryAfter } : fromPort)}`);
  }
  await Promise.all([apps.throttler.close(), apps.ported.close()]);
  return { throttlerLines, portLines };
}

/** Checks the throttler's answers against the steps, then the port's against the throttler's. */
async function differential(
  apps: { throttler: INestApplication; ported: INestApplication },
  start: number,
  steps: Step[],
): Promise<void> {
  const { throttlerLines, portLines } = await replay(apps, start, steps);
  expect(throttlerLines).toEqual(steps.map(([at, path, answers]) => `${at} ${path} ${answers}`));
  expect(portLines).toEqual(throttlerLines);
}

/** From `now` on, Date, timers and performance are fake; what the HTTP stack needs to move stays real. */
function fakeTimeFrom(now: number): void {
  jest.useFakeTimers({ now, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
}

afterEach(() => jest.useRealTimers());

/**
 * The port of throttler's one unnamed throttler as the guide writes it: a route-scoped sliding log per IP named
 * 'default', with `fields` for its limit, window and block.
 */
const routeDefault = (fields: Pick<RateLimitWindowPolicy, 'limit' | 'window' | 'block'>): RateLimitWindowPolicy => ({
  name: 'default',
  algorithm: 'sliding-window-log',
  key: 'ip',
  scope: 'route',
  ...fields,
});

/** Both apps on `controllers`, from `start` in fake time: throttler with `throttlers`, the port with `defaults`. */
async function appsFrom(
  start: number,
  throttlers: ThrottlerModuleOptions,
  defaults: RateLimitPolicy[],
  controllers: Type[],
  portedControllers: Type[] = controllers,
): Promise<{ throttler: INestApplication; ported: INestApplication }> {
  fakeTimeFrom(start);
  return {
    throttler: await throttlerApp(throttlers, controllers),
    ported: await portedApp({ defaults }, portedControllers),
  };
}

// Two routes with no decorator: each has its own budget under throttler's one default throttler.
@Controller()
class TwoRoutes {
  @Get('a')
  a() {
    return 'a';
  }

  @Get('b')
  b() {
    return 'b';
  }
}

describe('an app ported from @nestjs/throttler as docs/migration-from-throttler.md says answers as it did', () => {
  // One throttler on two undecorated routes, ported as routeDefault(): the same answers, step by step.
  it.each([
    {
      name: 'per-route budgets: forRoot([{ ttl, limit }]) is a route-scoped sliding log with a block of the ttl',
      throttler: { ttl: 60_000, limit: 3 },
      port: routeDefault({ limit: 3, window: 60_000, block: 60_000 }),
      steps: [
        [0, '/a', '200'],
        [1000, '/a', '200'],
        [2000, '/a', '200'],
        [3000, '/a', '429 default 60'],
        // another route, another budget
        [4000, '/b', '200'],
        [5000, '/b', '200'],
        [6000, '/b', '200'],
        [7000, '/b', '429 default 60'],
        // throttler's blockDuration defaults to the ttl: a denial blocks for a whole ttl from that moment
        [62_000, '/a', '429 default 1'],
        [63_000, '/a', '200'],
        [64_000, '/b', '429 default 3'],
        [67_000, '/b', '200'],
      ],
    },
    {
      name: "blockDuration: 30000 is block: '30s'",
      throttler: { ttl: 10_000, limit: 2, blockDuration: 30_000 },
      port: routeDefault({ limit: 2, window: '10s', block: '30s' }),
      steps: [
        [0, '/a', '200'],
        [1000, '/a', '200'],
        [2000, '/a', '429 default 30'],
        // the window is over, the block is not
        [15_000, '/a', '429 default 17'],
        [31_999, '/a', '429 default 1'],
        [32_000, '/a', '200'],
        [32_500, '/a', '200'],
        [33_000, '/a', '429 default 30'],
      ],
    },
    {
      name: 'blockDuration: 0 is no block: a denied key waits for its oldest hit to leave the window',
      throttler: { ttl: 10_000, limit: 2, blockDuration: 0 },
      port: routeDefault({ limit: 2, window: '10s' }),
      steps: [
        [0, '/a', '200'],
        [1000, '/a', '200'],
        [2000, '/a', '429 default 8'],
        [10_000, '/a', '200'],
        [10_500, '/a', '429 default 1'],
        [11_000, '/a', '200'],
      ],
    },
  ] satisfies { name: string; throttler: object; port: RateLimitPolicy; steps: Step[] }[])(
    '$name',
    async ({ throttler, port, steps }) => {
      await differential(await appsFrom(EDGE, [throttler], [port], [TwoRoutes]), EDGE, steps);
    },
  );

  describe('first-request windows', () => {
    // 10 s before a minute boundary, so that a clock-aligned window ends 10 s after the first request.
    const start = EDGE + 50_000;
    const steps: Step[] = [
      [0, '/a', '200'],
      [5000, '/a', '200'],
      // 30 s after the first request, 20 s into the next clock-aligned minute
      [30_000, '/a', '429 default 60'],
      // after the first request's minute, within the block
      [61_000, '/a', '429 default 29'],
      [91_000, '/a', '200'],
    ];
    // As @nest-lab/throttler-storage-redis counts (a window from the key's first request: the guide's port of
    // it). On this sequence throttler's in-memory storage, which counts each hit for a ttl, answers the same.
    const firstRequestPort: RateLimitPolicy = {
      name: 'default',
      algorithm: 'fixed-window',
      anchor: 'first-request',
      limit: 2,
      window: 60_000,
      block: 60_000,
      key: 'ip',
      scope: 'route',
    };

    it("fixed-window with anchor: 'first-request' starts a key's window at its first request", async () => {
      await differential(
        await appsFrom(start, [{ ttl: 60_000, limit: 2 }], [firstRequestPort], [TwoRoutes]),
        start,
        steps,
      );
    });

    it("while the clock-aligned default ('clock') would admit every one of those requests", async () => {
      const { anchor: _anchor, ...clockAligned } = firstRequestPort as RateLimitWindowPolicy;
      const apps = await appsFrom(start, [{ ttl: 60_000, limit: 2 }], [clockAligned], [TwoRoutes]);
      const { throttlerLines, portLines } = await replay(apps, start, steps);
      expect(throttlerLines).toEqual(steps.map(([at, path, answers]) => `${at} ${path} ${answers}`));
      expect(portLines).toEqual(steps.map(([at, path]) => `${at} ${path} 200`));
    });
  });

  it('skipped routes: @SkipThrottle() is @SkipRateLimit(), on a handler or a class', async () => {
    @Controller()
    class ThrottledRoutes {
      @Get('limited')
      limited() {
        return 'limited';
      }

      @Get('health')
      @SkipThrottle()
      health() {
        return 'ok';
      }
    }
    @Controller('internal')
    @SkipThrottle()
    class ThrottledInternal {
      @Get('metrics')
      metrics() {
        return 'metrics';
      }
    }
    @Controller()
    class PortedRoutes {
      @Get('limited')
      limited() {
        return 'limited';
      }

      @Get('health')
      @SkipRateLimit()
      health() {
        return 'ok';
      }
    }
    @Controller('internal')
    @SkipRateLimit()
    class PortedInternal {
      @Get('metrics')
      metrics() {
        return 'metrics';
      }
    }
    const apps = await appsFrom(
      EDGE,
      [{ ttl: 60_000, limit: 2 }],
      [routeDefault({ limit: 2, window: '1m', block: '1m' })],
      [ThrottledRoutes, ThrottledInternal],
      [PortedRoutes, PortedInternal],
    );
    await differential(apps, EDGE, [
      ...[0, 1, 2, 3].map((i): Step => [i * 100, '/health', '200']),
      ...[4, 5, 6, 7].map((i): Step => [i * 100, '/internal/metrics', '200']),
      [1000, '/limited', '200'],
      [1100, '/limited', '200'],
      [1200, '/limited', '429 default 60'],
      [1300, '/health', '200'],
    ]);
  });

  it('named throttlers: one policy per throttler, @Throttle({ short }) restates the policy it changes', async () => {
    const SHORT: RateLimitPolicy = {
      name: 'short',
      algorithm: 'sliding-window-log',
      limit: 3,
      window: '1s',
      block: '1s',
      key: 'ip',
      scope: 'route',
    };
    const LONG: RateLimitPolicy = {
      name: 'long',
      algorithm: 'sliding-window-log',
      limit: 100,
      window: '1m',
      block: '1m',
      key: 'ip',
      scope: 'route',
    };
    @Controller()
    class ThrottledRoutes {
      @Get('open')
      open() {
        return 'open';
      }

      @Get('strict')
      @Throttle({ short: { limit: 1, ttl: 1000 } })
      strict() {
        return 'strict';
      }

      @Get('no-short')
      @SkipThrottle({ short: true })
      noShort() {
        return 'no-short';
      }
    }
    @Controller()
    class PortedRoutes {
      @Get('open')
      open() {
        return 'open';
      }

      @Get('strict')
      @RateLimit({ ...SHORT, limit: 1 })
      strict() {
        return 'strict';
      }

      @Get('no-short')
      @SkipRateLimit('short')
      noShort() {
        return 'no-short';
      }
    }
    const apps = await appsFrom(
      EDGE,
      [
        { name: 'short', ttl: 1000, limit: 3 },
        { name: 'long', ttl: 60_000, limit: 100 },
      ],
      [SHORT, LONG],
      [ThrottledRoutes],
      [PortedRoutes],
    );
    await differential(apps, EDGE, [
      [0, '/strict', '200'],
      [100, '/strict', '429 short 1'],
      [1100, '/strict', '200'],
      [1200, '/open', '200'],
      [1300, '/open', '200'],
      [1400, '/open', '200'],
      [1500, '/open', '429 short 1'],
      // without 'short', 100 in a minute pass however fast they come, and the 101st is blocked for a minute
      ...Array.from({ length: 100 }, (_, i): Step => [2000 + i * 10, '/no-short', '200']),
      [3000, '/no-short', '429 long 60'],
      [4000, '/no-short', '429 long 59'],
      [63_000, '/no-short', '200'],
    ]);
  });

  describe("errorMessage: a filter of yours answers instead of the module's", () => {
    const MESSAGE = 'Slow down';
    @Catch(RateLimitExceededException)
    class SlowDown implements ExceptionFilter {
      catch(_exception: RateLimitExceededException, host: ArgumentsHost) {
        host.switchToHttp().getResponse<ExpressResponse>().status(429).json({ statusCode: 429, message: MESSAGE });
      }
    }
    @Module({ providers: [{ provide: APP_FILTER, useClass: SlowDown }] })
    class SlowDownModule {}

    it.each([
      ['app.useGlobalFilters()', { prepare: (app: INestApplication) => app.useGlobalFilters(new SlowDown()) }, true],
      ['an APP_FILTER in a module imported after RateLimitModule', { imports: [SlowDownModule] }, true],
      // Nest tries the global filters last registered first: the module's, then this one, which never runs.
      [
        "not an APP_FILTER of the root module's own providers",
        { providers: [{ provide: APP_FILTER, useClass: SlowDown }] },
        false,
      ],
    ])('%s', async (_, more, answers) => {
      fakeTimeFrom(EDGE);
      const throttlerApps = await throttlerApp({ throttlers: [{ ttl: 60_000, limit: 1 }], errorMessage: MESSAGE }, [
        TwoRoutes,
      ]);
      const ported = await portedApp(
        { defaults: [routeDefault({ limit: 1, window: '1m', block: '1m' })] },
        [TwoRoutes],
        more,
      );
      const denied = [];
      for (const app of [throttlerApps, ported]) {
        expect((await request(app.getHttpServer()).get('/a')).status).toBe(200);
        denied.push(await request(app.getHttpServer()).get('/a'));
        await app.close();
      }
      const [fromThrottler, fromPort] = denied as [request.Response, request.Response];
      expect(fromThrottler.status).toBe(429);
      expect(fromThrottler.body).toEqual({ statusCode: 429, message: MESSAGE });
      expect(fromThrottler.headers['retry-after']).toBe('60');
      // the limiter has set Retry-After before any filter runs
      expect(fromPort.status).toBe(429);
      expect(fromPort.headers['retry-after']).toBe('60');
      expect(fromPort.headers['ratelimit']).toBe('"default";r=0;t=60');
      if (answers) expect(fromPort.body).toEqual(fromThrottler.body);
      else expect(fromPort.body).toMatchObject({ code: 'RATE_LIMITED', policy: 'default' });
    });
  });

  describe('random traffic on two routes', () => {
    /** The same pseudo-random numbers every run (a linear congruential generator). */
    function random(seed: number): () => number {
      let state = seed;
      return () => {
        state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
        return state / 2 ** 31;
      };
    }

    it.each([
      ['blockDuration unset (the ttl)', { ttl: 10_000, limit: 5 }, { block: 10_000 }],
      ['blockDuration: 0', { ttl: 10_000, limit: 5, blockDuration: 0 }, {}],
      ['blockDuration: 25000', { ttl: 10_000, limit: 5, blockDuration: 25_000 }, { block: 25_000 }],
    ])('%s', async (_, throttlerOptions, block) => {
      const apps = await appsFrom(
        EDGE,
        [throttlerOptions],
        [routeDefault({ limit: 5, window: 10_000, ...block })],
        [TwoRoutes],
      );
      const next = random(42);
      const steps: Step[] = [];
      let at = 0;
      for (let i = 0; i < 300; i++) {
        steps.push([at, next() < 0.7 ? '/a' : '/b', '']);
        at += Math.floor(next() * next() * 6000);
      }
      const { throttlerLines, portLines } = await replay(apps, EDGE, steps);
      expect(throttlerLines.filter((line) => line.includes(' 429 ')).length).toBeGreaterThan(30);
      expect(portLines).toEqual(throttlerLines);
    });
  });
});
