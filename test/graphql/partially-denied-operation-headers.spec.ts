import { Args, GqlExecutionContext, Int, Mutation, Query, Resolver } from '@nestjs/graphql';

import { RateLimit, type RateLimitModuleOptions, type RateLimitPolicy } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import {
  GRAPHQL_DRIVERS,
  policyNames,
  startGraphQLApp,
  type GraphQLResponse,
  type GraphQLTestApp,
} from '../support/graphql-app.js';
import { nth } from '../support/harness.js';
import { alignedStart } from '../support/time.js';
import { perMinute } from '../support/policies.js';
import { PER_USER } from './fixtures.js';

const EXPORTS = perMinute('exports', 1);

/** A token bucket of 10 a minute (one token back every 6 s); a call costs its `rows` argument. */
const ROWS: RateLimitPolicy = {
  name: 'rows',
  algorithm: 'token-bucket',
  limit: 10,
  window: '1m',
  key: 'ip',
  cost: (ctx) => GqlExecutionContext.create(ctx).getArgs<{ rows: number }>().rows,
};

/**
 * Root fields under policies of their own besides the class's (`reports`) and the defaults (`per-user`), which
 * they all share. Mutations are here because graphql-js runs root mutation fields one after the other, so
 * which resolver writes the headers last is known; root query fields run concurrently.
 */
@Resolver()
@RateLimit(perMinute('reports', 100))
class ReportsResolver {
  @Query(() => String, { nullable: true })
  @RateLimit(EXPORTS)
  exportReport(): string {
    return 'ok';
  }

  /** Its shadow policy must stay out of the headers whatever the other resolvers decide. */
  @Query(() => String, { nullable: true })
  @RateLimit([perMinute('searches', 10), perMinute('new-searches', 1, { mode: 'shadow' })])
  search(): string {
    return 'ok';
  }

  @Mutation(() => String, { nullable: true })
  @RateLimit(EXPORTS)
  startExport(): string {
    return 'ok';
  }

  @Mutation(() => Int, { nullable: true })
  @RateLimit(ROWS)
  importRows(@Args('rows', { type: () => Int }) rows: number): number {
    return rows;
  }
}

/** The `RateLimit` field's items by policy, and how many items name each (to see that none is there twice). */
function rateLimitItems(res: GraphQLResponse): { items: Record<string, string>; counts: Record<string, number> } {
  const items: Record<string, string> = {};
  const counts: Record<string, number> = {};
  for (const item of (res.headers['ratelimit'] ?? '').split(', ').filter(Boolean)) {
    const [name, ...params] = item.split(';');
    const policy = (name ?? '').replaceAll('"', '');
    items[policy] = params.join(';');
    counts[policy] = (counts[policy] ?? 0) + 1;
  }
  return { items, counts };
}

const once = (...policies: string[]): Record<string, number> => Object.fromEntries(policies.map((p) => [p, 1]));

describe.each(GRAPHQL_DRIVERS)('regression: GraphQL responses lose the policy that denied, on %s', (driver) => {
  let t: GraphQLTestApp;
  const start = async (options: RateLimitModuleOptions = {}) => {
    t = await startGraphQLApp(driver, {
      resolvers: [ReportsResolver],
      rateLimit: { defaults: [PER_USER], ...options },
      clock: new FakeClock(alignedStart(60_000) + 60_000),
    });
  };
  afterEach(() => t.close());

  it('names every policy of the operation once, the denying one at r=0, with its wait in Retry-After', async () => {
    await start();
    expect((await t.gql('{ exportReport }')).data).toEqual({ exportReport: 'ok' });
    t.clock.advance(11_000);
    const res = await t.gql('{ search exportReport }');
    expect(res.data).toEqual({ search: 'ok', exportReport: null });
    expect(res.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMITED', policy: 'exports', retryAfter: 49 }]);
    const { items, counts } = rateLimitItems(res);
    expect(counts).toEqual(once('per-user', 'reports', 'searches', 'exports'));
    // Shared policies show their most restrictive decision: what is left after `search` consumed.
    expect(items).toEqual({
      'per-user': 'r=998;t=49',
      reports: 'r=98;t=49',
      searches: 'r=9;t=49',
      exports: 'r=0;t=49',
    });
    expect([...policyNames(res)].sort()).toEqual(['exports', 'per-user', 'reports', 'searches']);
    expect(res.headers['ratelimit-policy']).toContain('"exports";q=1;w=60');
    expect(res.headers['ratelimit-policy']).toContain('"searches";q=10;w=60');
    expect(res.headers['retry-after']).toBe('49');
  });

  it('sends the longest wait of the operation in Retry-After, also when a shorter one is decided last', async () => {
    await start();
    await t.gql('mutation { startExport }');
    t.clock.advance(11_000);
    expect((await t.gql('mutation { importRows(rows: 10) }')).data).toEqual({ importRows: 10 });
    // `startExport` waits 49 s and is decided first; `importRows` needs 3 tokens, 18 s, and is decided last.
    const res = await t.gql('mutation { startExport importRows(rows: 3) }');
    expect(res.data).toEqual({ startExport: null, importRows: null });
    expect(res.errors?.map((e) => e.extensions)).toEqual([
      { code: 'RATE_LIMITED', policy: 'exports', retryAfter: 49 },
      { code: 'RATE_LIMITED', policy: 'rows', retryAfter: 18 },
    ]);
    const { items, counts } = rateLimitItems(res);
    expect(counts).toEqual(once('per-user', 'reports', 'exports', 'rows'));
    expect(items['exports']).toBe('r=0;t=49');
    expect(items['rows']).toBe('r=0;t=18');
    expect(res.headers['retry-after']).toBe('49');
  });

  it('shows a policy two resolvers share once, with its most restrictive decision: a denial over an allow', async () => {
    await start();
    expect((await t.gql('mutation { importRows(rows: 3) }')).data).toEqual({ importRows: 3 });
    // 7 tokens left: `big` (8) is denied, 6 s short of one token, and consumes nothing; `small` (1), decided
    // after it, is allowed.
    const res = await t.gql('mutation { big: importRows(rows: 8) small: importRows(rows: 1) }');
    expect(res.data).toEqual({ big: null, small: 1 });
    expect(res.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMITED', policy: 'rows', retryAfter: 6 }]);
    const { items, counts } = rateLimitItems(res);
    expect(counts).toEqual(once('per-user', 'reports', 'rows'));
    expect(items).toEqual({ 'per-user': 'r=998;t=60', reports: 'r=98;t=60', rows: 'r=7;t=6' });
    expect(policyNames(res)).toEqual(['per-user', 'reports', 'rows']);
    expect(res.headers['retry-after']).toBe('6');
  });

  it('makes the legacy fields of the same merged set', async () => {
    await start({ headers: 'both' });
    await t.gql('mutation { startExport }');
    t.clock.advance(11_000);
    // The denied `startExport` is decided first, the allowed `importRows` last.
    const res = await t.gql('mutation { startExport importRows(rows: 1) }');
    expect(res.data).toEqual({ startExport: null, importRows: 1 });
    expect(rateLimitItems(res).counts).toEqual(once('per-user', 'reports', 'exports', 'rows'));
    expect([
      res.headers['x-ratelimit-limit'],
      res.headers['x-ratelimit-remaining'],
      res.headers['x-ratelimit-reset'],
      res.headers['retry-after'],
    ]).toEqual(['1', '0', '49', '49']);
  });

  it('leaves an operation of one resolver as it was', async () => {
    await start();
    const res = await t.gql('{ search }');
    expect(res.headers['ratelimit']).toBe('"per-user";r=999;t=60, "reports";r=99;t=60, "searches";r=9;t=60');
    expect(nth(policyNames(res), 2)).toBe('searches');
    expect(res.headers['retry-after']).toBeUndefined();
  });
});
