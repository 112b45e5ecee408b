import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import request from 'supertest';

import {
  RATE_LIMIT_CLOCK,
  RateLimit,
  type RateLimitDecisionEvent,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitPolicyError,
  RateLimitService,
} from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { tenantOf } from '../support/policies.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { waitFor } from '../support/wait.js';

@Controller()
class TenantController {
  @Get('tenant')
  @RateLimit({ name: 'per-tenant', algorithm: 'fixed-window', limit: 3, window: '1d', key: tenantOf })
  tenant() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({ name: 'bucket', algorithm: 'token-bucket', limit: 1, burst: 2, window: '1d', key: tenantOf })
  bucket() {
    return 'ok';
  }
}

/** One app instance, on its own clock (the instances of a test move theirs together). */
interface Instance {
  readonly app: INestApplication;
  readonly clock: FakeClock;
  readonly service: RateLimitService;
  readonly logger: CapturingLogger;
  readonly events: RateLimitDecisionEvent[];
  /** A request's status and the limit its RateLimit-Policy field names. */
  get(path: string, tenant: string): Promise<{ status: number; limit: number | undefined }>;
}

async function instance(options: RateLimitModuleOptions, clock: FakeClock): Promise<Instance> {
  const events: RateLimitDecisionEvent[] = [];
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({ ...options, onDecision: (event) => events.push(event) })],
    controllers: [TenantController],
  })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .compile();
  const logger = new CapturingLogger();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return {
    app,
    clock,
    service: app.get(RateLimitService),
    logger,
    events,
    get: async (path, tenant) => {
      const res = await request(app.getHttpServer()).get(`/${path}`).set('x-tenant', tenant);
      const q = /q=(\d+)/.exec(String(res.headers['ratelimit-policy'] ?? ''))?.[1];
      return { status: res.status, limit: q === undefined ? undefined : Number(q) };
    },
  };
}

const servers = storeServers();

describe.each(['memory', 'redis', 'postgres'] as const)('overrides on the %s store', (store) => {
  let a: Instance;
  let b: Instance;
  const clock = new FakeClock();

  beforeEach(async () => {
    clock.set(Date.UTC(2030, 0, 1));
    const options = storeOptions(store, servers);
    a = await instance(options, clock);
    // The memory store is one process's: its second instance is the first.
    b = store === 'memory' ? a : await instance(options, clock);
  });

  afterEach(async () => {
    await a.app.close();
    if (b !== a) await b.app.close();
  });

  const statuses = async (on: Instance, path: string, tenant: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await on.get(path, tenant)).status);
    return out;
  };

  it('raises a limit on every instance, keeps what was counted, and removal restores the declared one', async () => {
    expect(await statuses(a, 'tenant', 'acme', 4)).toEqual([200, 200, 200, 429]);
    expect((await b.get('tenant', 'acme')).status).toBe(429);

    const set = await a.service.override('per-tenant', 'tenant:acme', { limit: 5, reason: 'launch' });
    expect(set).toEqual({
      policy: 'per-tenant',
      identity: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      limit: 5,
      burst: undefined,
      until: undefined,
      reason: 'launch',
      shadow: false,
      setAt: new Date(clock.now()),
    });
    // Raised to 5 with 3 counted: two more, wherever they land.
    await waitFor(async () => (await b.get('tenant', 'acme')).status === 200, 'the other instance applies it');
    expect(await a.get('tenant', 'acme')).toEqual({ status: 200, limit: 5 });
    expect(await b.get('tenant', 'acme')).toEqual({ status: 429, limit: 5 });
    expect(await a.get('tenant', 'acme')).toEqual({ status: 429, limit: 5 });
    // Another tenant keeps the declared limit.
    expect(await statuses(b, 'tenant', 'other', 4)).toEqual([200, 200, 200, 429]);

    expect(await b.service.overrides()).toEqual([set]);
    expect(await b.service.overrides('bucket')).toEqual([]);
    expect(await b.service.removeOverride('per-tenant', 'tenant:acme')).toBe(true);
    expect(await b.service.removeOverride('per-tenant', 'tenant:acme')).toBe(false);
    await waitFor(async () => (await a.get('tenant', 'acme')).limit === 3, 'the other instance drops it');
    expect(await b.get('tenant', 'acme')).toEqual({ status: 429, limit: 3 });
    expect(await a.service.overrides()).toEqual([]);
  });

  it('lowers a limit: denies until usage falls below it', async () => {
    expect(await statuses(a, 'tenant', 'acme', 2)).toEqual([200, 200]);
    await b.service.override('per-tenant', 'tenant:acme', { limit: 2 });
    await waitFor(async () => (await a.get('tenant', 'acme')).limit === 2, 'the other instance applies it');
    expect(await a.get('tenant', 'acme')).toEqual({ status: 429, limit: 2 });
    // The next day's window starts at 0: two requests under the lowered limit.
    clock.advance(86_400_000);
    expect(await statuses(b, 'tenant', 'acme', 3)).toEqual([200, 200, 429]);
  });

  it('lapses by itself at its ttl, on every instance', async () => {
    await a.service.override('per-tenant', 'tenant:acme', { limit: 10, ttl: '2h' });
    await waitFor(async () => (await b.get('tenant', 'acme')).limit === 10, 'the other instance applies it');
    expect(await statuses(a, 'tenant', 'acme', 4)).toEqual([200, 200, 200, 200]);
    clock.advance(2 * 3_600_000 - 1);
    expect(await b.get('tenant', 'acme')).toEqual({ status: 200, limit: 10 });
    clock.advance(1);
    // Six counted, the declared 3 again: denied on both, with no announcement.
    expect(await a.get('tenant', 'acme')).toEqual({ status: 429, limit: 3 });
    expect(await b.get('tenant', 'acme')).toEqual({ status: 429, limit: 3 });
    expect(await a.service.overrides()).toEqual([]);
  });

  /** Waits until `other` has read the overrides again since `on` set one more (a probe of its own). */
  const heard = async (on: Instance, other: Instance) => {
    const limit = 1000 + Math.floor(Math.random() * 1000);
    await on.service.override('per-tenant', 'tenant:probe', { limit });
    await waitFor(async () => (await other.get('tenant', 'probe')).limit === limit, 'the other instance reads it');
  };

  it('overrides a burst: the bucket holds what it says', async () => {
    await a.service.override('bucket', 'tenant:acme', { burst: 5 });
    await heard(a, b);
    expect(await statuses(b, 'bucket', 'acme', 6)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await statuses(a, 'bucket', 'other', 3)).toEqual([200, 200, 429]);
  });

  it('a dry run changes no decision and tells what the override would have answered', async () => {
    await a.service.override('per-tenant', 'tenant:acme', { limit: 2, shadow: true });
    await a.service.override('per-tenant', 'tenant:applied', { limit: 1 });
    await heard(a, b);
    b.events.length = 0;
    expect(await statuses(b, 'tenant', 'acme', 4)).toEqual([200, 200, 200, 429]);
    const acme = b.events.filter((e) => e.policy === 'per-tenant' && e.key === 'tenant:acme');
    expect(acme.map((e) => [e.allowed, e.override])).toEqual([
      [true, { shadow: true, limit: 2, allowed: true }],
      [true, { shadow: true, limit: 2, allowed: true }],
      [true, { shadow: true, limit: 2, allowed: false }],
      [false, { shadow: true, limit: 2, allowed: false }],
    ]);
    expect(await statuses(b, 'tenant', 'applied', 2)).toEqual([200, 429]);
    const applied = b.events.filter((e) => e.key === 'tenant:applied').map((e) => e.override);
    expect(applied).toEqual([
      { shadow: false, limit: 1, allowed: true },
      { shadow: false, limit: 1, allowed: false },
    ]);
    // A key without an override has none in its event.
    expect((await b.get('tenant', 'plain')).status).toBe(200);
    expect(b.events.at(-1)).toMatchObject({ key: 'tenant:plain', override: undefined });
  });

  it('logs each change once, with the stored hash and never the identity', async () => {
    const set = await a.service.override('per-tenant', 'tenant:acme-secret', { limit: 9, ttl: 60_000, reason: 'r1' });
    await a.service.removeOverride('per-tenant', 'tenant:acme-secret');
    // Nest's Logger is one per process: the lines go to the logger of the app made last.
    const loggers = [...new Set([a.logger, b.logger])];
    const lines = loggers.flatMap((l) => l.find('log', /Override of policy/)).map((e) => e.message);
    expect(lines).toEqual([
      `Override of policy "per-tenant" for identity ${set.identity} set: limit 9, until ` +
        `${new Date(clock.now() + 60_000).toISOString()}, reason "r1"`,
      `Override of policy "per-tenant" for identity ${set.identity} removed`,
    ]);
    expect(loggers.flatMap((l) => l.lines).join('\n')).not.toContain('acme-secret');
  });

  it('refuses bad input, naming it, and keeps nothing', async () => {
    const refused = async (promise: Promise<unknown>, field: string | undefined, pattern: RegExp) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitPolicyError);
      expect((error as RateLimitPolicyError).field).toBe(field);
      expect((error as Error).message).toMatch(pattern);
    };
    const { service } = a;
    await refused(service.override('nope', 'tenant:x', { limit: 5 }), undefined, /"nope".*declared names are/);
    await refused(
      service.override('per-tenant', 'tenant:x', { burst: 5 }),
      'burst',
      /fixed-window policy has no burst/,
    );
    await refused(service.override('per-tenant', 'tenant:x', { limit: 0 }), 'limit', /limit must be an integer >= 1/);
    await refused(service.override('per-tenant', 'tenant:x', { limit: 2.5 }), 'limit', /integer >= 1, got 2.5/);
    await refused(service.override('bucket', 'tenant:x', { burst: -1 }), 'burst', /burst must be an integer >= 1/);
    await refused(service.override('per-tenant', 'tenant:x', { limit: 5, ttl: 'soon' }), 'ttl', /duration.*"soon"/);
    await refused(service.override('per-tenant', 'tenant:x', {}), 'limit', /needs a limit, got neither/);
    await refused(
      service.override('per-tenant', 'tenant:x', { limit: 5, until: 1 } as never),
      'until',
      /no field "until"/,
    );
    await refused(service.override('per-tenant', '', { limit: 5 }), 'key', /non-empty string/);
    expect(await service.overrides()).toEqual([]);
  });
});

// Regression: a store without a feed of changes (a PostgreSQL pool too small to spare a listening connection)
// announced nothing, so another instance applied an override only after its next start.
describe('overrides on PostgreSQL without a feed of changes (a pool of 2)', () => {
  it('reach the other instance all the same: it reads them again every second', async () => {
    const pool = new pg.Pool({ connectionString: servers.db.url, max: 2 });
    const clock = new FakeClock();
    const options = {
      ...storeOptions('postgres', servers),
      postgres: { pool, schema: servers.db.schema, migrate: true },
    };
    const a = await instance(options, clock);
    const b = await instance(options, clock);
    try {
      expect(await Promise.all([1, 2, 3, 4].map(() => a.get('tenant', 'acme')))).toContainEqual({
        status: 429,
        limit: 3,
      });
      await a.service.override('per-tenant', 'tenant:acme', { limit: 10 });
      await waitFor(async () => (await b.get('tenant', 'acme')).status === 200, 'the other instance applies it');
      expect(await b.get('tenant', 'acme')).toEqual({ status: 200, limit: 10 });
    } finally {
      await Promise.all([a.app.close(), b.app.close()]);
      await pool.end();
    }
  });
});
