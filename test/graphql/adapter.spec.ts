import {
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import {
  Args,
  Field,
  GqlExecutionContext,
  Int,
  Mutation,
  ObjectType,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import type { Observable } from 'rxjs';

import { graphqlAdapter } from '../../lib/contexts/graphql.adapter.js';
import type { ContextAdapter, RateLimitDenial } from '../../lib/contexts/context-adapter.js';
import { compileTrust } from '../../lib/keys/client-ip.js';
import type { RateLimitDecision } from '../../lib/policy/policy.types.js';
import { errorsByPath, GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';

/**
 * The GraphQL adapter driven by hand, with no limiter: a guard and an interceptor of the test's own call it the
 * way the orchestrator does, so what reaches the client through each driver is checked on its own.
 */
interface Seen {
  readonly at: 'guard' | 'interceptor';
  readonly field: string;
  readonly n: number;
  readonly invocation: object;
  readonly ip: string | undefined;
  readonly user: string | undefined;
}
const seen: Seen[] = [];

const DECISION: RateLimitDecision = {
  allowed: false,
  policy: 'probe',
  limit: 1,
  remaining: 0,
  resetMs: 30_000,
  retryAfterMs: 30_000,
};

@Injectable()
class ProbeGuard implements CanActivate {
  private adapter?: ContextAdapter;
  constructor(
    private readonly host: HttpAdapterHost,
    private readonly moduleRef: ModuleRef,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    this.adapter ??= await graphqlAdapter({
      trust: compileTrust('loopback'),
      ipv6Prefix: 64,
      logger: new Logger('RateLimit'),
      httpAdapterHost: this.host,
      moduleRef: this.moduleRef,
    });
    probe.adapter = this.adapter;
    const adapter = this.adapter;
    const gql = GqlExecutionContext.create(ctx);
    const { n = 0, mode = 'allow' } = gql.getArgs<{ n?: number; mode?: string }>();
    const field = gql.getInfo<{ fieldName: string }>().fieldName;
    seen.push({
      at: 'guard',
      field,
      n,
      invocation: adapter.invocation(ctx),
      ip: adapter.clientIp(ctx),
      user: adapter.defaultUser(ctx),
    });
    adapter.setHeaders(ctx, [
      ['X-Probe', `${field}-${n}`],
      // As the limiter does: a denial that can be retried writes its wait, an outage writes its own.
      ...(mode === 'deny' ? ([['Retry-After', '30']] as const) : []),
    ]);
    const denial: RateLimitDenial = { code: 'RATE_LIMITED', message: `Rate limit "probe" exceeded`, policy: 'probe' };
    if (mode === 'deny') adapter.deny(ctx, { ...denial, retryAfter: 30 }, DECISION);
    if (mode === 'never') adapter.deny(ctx, denial, { ...DECISION, retryAfterMs: Infinity });
    if (mode === 'down') {
      adapter.unavailable(ctx, {
        code: 'RATE_LIMIT_UNAVAILABLE',
        message: 'store down',
        policy: 'probe',
        retryAfter: 1,
      });
    }
    return true;
  }
}
const probe: { adapter?: ContextAdapter } = {};

@Injectable()
class ProbeInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const adapter = probe.adapter as ContextAdapter;
    const gql = GqlExecutionContext.create(ctx);
    const field = gql.getInfo<{ fieldName: string }>().fieldName;
    const n = gql.getArgs<{ n?: number }>().n ?? 0;
    seen.push({ at: 'interceptor', field, n, invocation: adapter.invocation(ctx), ip: undefined, user: undefined });
    return next.handle();
  }
}

@ObjectType()
class Probe {
  @Field(() => Int)
  n!: number;
}

@Resolver(() => Probe)
@UseGuards(ProbeGuard)
@UseInterceptors(ProbeInterceptor)
class ProbeResolver {
  @Query(() => Probe, { nullable: true })
  echo(@Args('n', { type: () => Int }) n: number, @Args('mode', { nullable: true }) _mode?: string): Probe {
    return { n };
  }

  @Query(() => String)
  plain(): string {
    return 'plain';
  }

  @Mutation(() => Int, { nullable: true })
  step(@Args('n', { type: () => Int }) n: number): number {
    return n;
  }

  @ResolveField(() => Int)
  double(@Parent() parent: Probe): number {
    return parent.n * 2;
  }
}

describe.each(GRAPHQL_DRIVERS)('the GraphQL adapter on %s', (driver) => {
  let t: GraphQLTestApp;
  beforeAll(async () => {
    t = await startGraphQLApp(driver, {
      rateLimit: false,
      resolvers: [ProbeResolver, ProbeGuard, ProbeInterceptor],
      fieldResolverEnhancers: ['guards', 'interceptors'],
      authenticate: true,
    });
  });
  afterAll(() => t.close());
  beforeEach(() => {
    seen.length = 0;
  });

  it('gives the guard and the interceptor of one resolver invocation the same object, and each invocation its own', async () => {
    const res = await t.gql('{ a: echo(n: 1) { n double } b: echo(n: 2) { n double } }');
    expect(res.data).toEqual({ a: { n: 1, double: 2 }, b: { n: 2, double: 4 } });
    // Two root invocations and two field-resolver invocations, each through its guard and its interceptor.
    expect(seen.map((s) => `${s.at}:${s.field}`).sort()).toEqual([
      'guard:double',
      'guard:double',
      'guard:echo',
      'guard:echo',
      'interceptor:double',
      'interceptor:double',
      'interceptor:echo',
      'interceptor:echo',
    ]);
    const invocations = new Set(seen.map((s) => s.invocation));
    expect(invocations.size).toBe(4);
    for (const object of invocations) {
      expect(seen.filter((s) => s.invocation === object).map((s) => s.at)).toEqual(['guard', 'interceptor']);
    }
  });

  it("reads the client address with trustProxy applied and the default user from the context's request", async () => {
    await t.gql('{ echo(n: 1) { n } }', { headers: { 'X-Forwarded-For': '203.0.113.9', 'X-User': 'alice' } });
    await t.gql('{ echo(n: 2) { n } }', {
      headers: { 'X-Forwarded-For': '2001:db8:1:2::7, 10.9.9.9', 'X-Sub': 's-7' },
    });
    await t.gql('{ echo(n: 3) { n } }', { headers: { 'X-Forwarded-For': '2001:db8:1:2::7' } });
    const guards = seen.filter((s) => s.at === 'guard');
    // 203.0.113.9 came through the loopback hop; 10.9.9.9 is no loopback proxy, so it is the client; IPv6 by /64.
    expect(guards.map((s) => s.ip)).toEqual(['203.0.113.9', '10.9.9.9', '2001:db8:1:2::/64']);
    // req.user.id, else req.user.sub, else none (the orchestrator then falls back to the IP).
    expect(guards.map((s) => s.user)).toEqual(['alice', 's-7', undefined]);
  });

  it('denies one field with a located GraphQL error, extensions exactly, while the other fields resolve', async () => {
    const res = await t.gql(
      '{ plain ok: echo(n: 1) { n } no: echo(n: 2, mode: "deny") { n } never: echo(n: 3, mode: "never") { n } }',
    );
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ plain: 'plain', ok: { n: 1 }, no: null, never: null });
    const errors = errorsByPath(res);
    expect(Object.keys(errors).sort()).toEqual(['never', 'no']);
    expect(errors.no).toEqual({
      message: 'Rate limit "probe" exceeded',
      path: ['no'],
      locations: [expect.objectContaining({ line: 1 })],
      extensions: { code: 'RATE_LIMITED', policy: 'probe', retryAfter: 30 },
    });
    expect(errors.never?.extensions).toEqual({ code: 'RATE_LIMITED', policy: 'probe' });
    expect(res.headers['retry-after']).toBe('30');
  });

  it('answers a fail-closed outage with RATE_LIMIT_UNAVAILABLE and Retry-After on the HTTP response', async () => {
    const res = await t.gql('{ plain down: echo(n: 1, mode: "down") { n } }');
    expect(res.data).toEqual({ plain: 'plain', down: null });
    expect(res.errors).toEqual([
      expect.objectContaining({
        message: 'store down',
        path: ['down'],
        extensions: { code: 'RATE_LIMIT_UNAVAILABLE', policy: 'probe', retryAfter: 1 },
      }),
    ]);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('keeps the longest Retry-After of the resolvers that share the HTTP response', async () => {
    // Root query fields run concurrently: whichever writes last, the 30 s wait outlasts the outage's 1 s.
    const res = await t.gql('{ down: echo(n: 1, mode: "down") { n } no: echo(n: 2, mode: "deny") { n } }');
    expect(res.data).toEqual({ down: null, no: null });
    expect(res.headers['retry-after']).toBe('30');
  });

  it('writes headers on the HTTP response; of several resolvers, the last one written wins', async () => {
    // Root mutation fields run one after the other, so the order of the writes is known.
    const res = await t.gql('mutation { first: step(n: 1) second: step(n: 2) }');
    expect(res.data).toEqual({ first: 1, second: 2 });
    expect(res.headers['x-probe']).toBe('step-2');
  });
});
