import { Controller, type ExecutionContext, Get, type Type } from '@nestjs/common';
import { GqlExecutionContext, Query, Resolver } from '@nestjs/graphql';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { startGraphQLApp } from '../support/graphql-app.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { heldInFlight, policyOf } from '../support/policies.js';
import { redisForSpec } from '../support/redis-server.js';
import { Gate, waitFor } from '../support/wait.js';
import { storeOptions } from '../support/store-options.js';

type Request = { headers: Record<string, string | undefined> };
const PLANS: Record<string, number> = { free: 10, pro: 100 };
const planOf = (headers: Request['headers']): number => PLANS[headers['x-plan'] ?? 'free'] ?? Number.NaN;
const httpPlan = (ctx: ExecutionContext): number => planOf(ctx.switchToHttp().getRequest<Request>().headers);

/** Where a concurrency limit's admitted requests wait, so that they stay in flight (see heldInFlight). */
const gate = new Gate();

/** One controller per algorithm, its limit the caller's plan. */
const controllers: Type[] = ALGORITHMS.map((algorithm) => {
  @Controller(algorithm)
  class PlanController {
    @Get()
    @RateLimit(policyOf(algorithm, { name: `plan-${algorithm}`, limit: httpPlan, window: '1h', key: 'ip' }))
    async get() {
      if (heldInFlight(algorithm)) await gate.pass();
      return 'ok';
    }

    @Get('async')
    @RateLimit(
      policyOf(algorithm, {
        name: `async-plan-${algorithm}`,
        limit: async (ctx) => httpPlan(ctx),
        window: '1h',
        key: 'ip',
      }),
    )
    async async() {
      if (heldInFlight(algorithm)) await gate.pass();
      return 'ok';
    }
  }
  return PlanController;
});

@Controller('burst')
class BurstController {
  @Get()
  @RateLimit({ name: 'burst-plan', algorithm: 'token-bucket', limit: 1, burst: httpPlan, window: '1h', key: 'ip' })
  get() {
    return 'ok';
  }
}

const redis = redisForSpec();

describe.each(ADAPTERS)('limits per plan over HTTP (%s)', (adapter) => {
  describe.each(['memory', 'redis'] as const)('on the %s store', (store) => {
    const start = () =>
      createApp(adapter, {
        imports: [RateLimitModule.forRoot(storeOptions(store, { redis }))],
        controllers: [...controllers, BurstController],
      });

    it.each(ALGORITHMS.flatMap((a) => [[a, ''] as const, [a, '/async'] as const]))(
      '%s%s: an upgrade admits at once, the units used stay used, a downgrade admits nothing more',
      async (algorithm, path) => {
        const { app } = await start();
        const held: Promise<number>[] = [];
        try {
          const send = async (plan: string) =>
            (await request(app.getHttpServer()).get(`/${algorithm}${path}`).set('x-plan', plan)).status;
          // A concurrency limit counts requests in flight: an admitted request is held in its handler (so the
          // units used stay used) and counts as a 200 here; each is checked to be a 200 once let go.
          const get = async (plan: string): Promise<number> => {
            if (!heldInFlight(algorithm)) return send(plan);
            const entered = gate.entered;
            let status: number | undefined;
            const response = send(plan).then((s) => (status = s));
            await waitFor(() => status !== undefined || gate.entered > entered, 'the request admitted or denied');
            if (status !== undefined) return status;
            held.push(response);
            return 200;
          };
          const statuses = async (plan: string, n: number) => {
            const out: number[] = [];
            for (let i = 0; i < n; i++) out.push(await get(plan));
            return out;
          };
          expect(await statuses('free', 10)).toEqual(Array(10).fill(200));
          // Denied twice: on Redis the second answer comes from the local cache of denials.
          expect(await statuses('free', 2)).toEqual([429, 429]);
          // The upgrade is seen at the next request, whatever the cache of denials holds.
          expect(await statuses('pro', 90)).toEqual(Array(90).fill(200));
          expect(await get('pro')).toBe(429);
          // Back to free: 100 used, 10 allowed; nothing more passes.
          expect(await statuses('free', 3)).toEqual([429, 429, 429]);
          const res = await request(app.getHttpServer()).get(`/${algorithm}${path}`).set('x-plan', 'free');
          expect(res.headers['ratelimit-policy']).toContain(`q=10`);
          gate.open();
          expect(await Promise.all(held)).toEqual(held.map(() => 200));
        } finally {
          gate.open();
          await app.close();
        }
      },
    );

    it('a burst per plan: the bucket holds what the plan says', async () => {
      const { app } = await start();
      try {
        const get = async (plan: string) =>
          (await request(app.getHttpServer()).get('/burst').set('x-plan', plan)).status;
        for (let i = 0; i < 10; i++) expect(await get('free')).toBe(200);
        expect(await get('free')).toBe(429);
        for (let i = 0; i < 90; i++) expect(await get('pro')).toBe(200);
        expect(await get('pro')).toBe(429);
      } finally {
        await app.close();
      }
    });

    it('a limit function that returns a bad value is a policy failure (fail open by default): the request goes on', async () => {
      const { app } = await start();
      try {
        const res = await request(app.getHttpServer()).get('/gcra').set('x-plan', 'enterprise');
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-policy']).toBeUndefined();
      } finally {
        await app.close();
      }
    });
  });
});

@Resolver()
class PlanResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({
    name: 'gql-plan',
    algorithm: 'sliding-window-counter',
    limit: (ctx) => planOf(GqlExecutionContext.create(ctx).getContext<{ req: Request }>().req.headers),
    window: '1h',
    key: 'ip',
  })
  hello(): string {
    return 'hello';
  }
}

describe('limits per plan in GraphQL', () => {
  it('decides a key with its new limit at its next operation', async () => {
    const gql = await startGraphQLApp('apollo', { resolvers: [PlanResolver], rateLimit: {} });
    try {
      const hello = async (plan: string) => (await gql.gql('{ hello }', { headers: { 'x-plan': plan } })).data?.hello;
      for (let i = 0; i < 10; i++) expect(await hello('free')).toBe('hello');
      expect(await hello('free')).toBeNull();
      expect(await hello('pro')).toBe('hello');
    } finally {
      await gql.close();
    }
  });
});

const SHARED = { name: 'shared-plan', algorithm: 'fixed-window', limit: httpPlan, window: '1h', key: 'ip' } as const;

@Controller('shared')
class SharedPlanController {
  @Get('a')
  @RateLimit(SHARED)
  a() {
    return 'ok';
  }

  @Get('b')
  @RateLimit(SHARED)
  b() {
    return 'ok';
  }
}

// Regression: two declarations of one policy whose limit is a function were taken for "other limits" (NaN is
// not NaN), so the second route got a state of its own and a client had the budget twice.
it('a per-plan policy declared on two routes keeps one state', async () => {
  const { app } = await createApp('express', {
    imports: [RateLimitModule.forRoot({})],
    controllers: [SharedPlanController],
  });
  try {
    for (let i = 0; i < 10; i++) {
      expect((await request(app.getHttpServer()).get(i % 2 === 0 ? '/shared/a' : '/shared/b')).status).toBe(200);
    }
    expect((await request(app.getHttpServer()).get('/shared/b')).status).toBe(429);
    expect((await request(app.getHttpServer()).get('/shared/a')).status).toBe(429);
  } finally {
    await app.close();
  }
});
