import { Args, GqlExecutionContext, Query, Resolver } from '@nestjs/graphql';

import { RateLimit, type RateLimitModuleOptions } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { errorsByPath, GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';
import { alignedStart } from '../support/time.js';
import { perMinute } from '../support/policies.js';

const lookupDown = (): boolean => {
  throw new Error('lookup down');
};

/** A query without policies, one limited to 1 per IP, one with a deny list, one whose allow function fails closed. */
@Resolver()
class ListsResolver {
  @Query(() => String)
  open(): string {
    return 'open';
  }

  @Query(() => String, { nullable: true })
  @RateLimit(perMinute('limited', 1))
  limited(): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit(
    perMinute('signup', 10, {
      deny: [
        '198.51.100.0/24',
        async (ctx) => GqlExecutionContext.create(ctx).getArgs<{ banned?: boolean }>().banned === true,
      ],
    }),
  )
  signup(@Args('banned', { nullable: true }) _banned?: boolean): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit(perMinute('closed', 5, { failMode: 'closed', allow: [lookupDown] }))
  closed(): string {
    return 'ok';
  }
}

const LISTS: RateLimitModuleOptions = {
  trustProxy: 'loopback',
  allow: ['10.1.0.0/16', '2001:db8:a::1'],
  deny: ['192.0.2.0/24'],
};

describe.each(GRAPHQL_DRIVERS)('allow and deny lists of GraphQL resolvers on %s', (driver) => {
  let t: GraphQLTestApp;
  const failures: [string, string][] = [];
  beforeEach(async () => {
    failures.length = 0;
    t = await startGraphQLApp(driver, {
      resolvers: [ListsResolver],
      rateLimit: { ...LISTS, onError: (error, policy) => failures.push([error.message, policy]) },
      clock: new FakeClock(alignedStart(60_000) + 60_000),
    });
  });
  afterEach(() => t.close());
  const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } });
  const remaining = async (policy: string, key: string) => (await t.service().peek(policy, key)).remaining;

  it('a denied field fails with RATE_LIMIT_DENY_LIST at its path; fields without policies resolve; nothing consumed', async () => {
    const res = await t.gql('{ open limited }', from('192.0.2.7'));
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ open: 'open', limited: null });
    expect(res.errors).toHaveLength(1);
    const { limited } = errorsByPath(res);
    expect({ message: limited?.message, path: limited?.path, extensions: limited?.extensions }).toEqual({
      message: 'Denied by the deny list',
      path: ['limited'],
      extensions: { code: 'RATE_LIMIT_DENY_LIST' },
    });
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(res.headers['retry-after']).toBeUndefined();
    expect(await remaining('limited', 'ip:192.0.2.7')).toBe(1);
  });

  it('an allowed client is not limited and gets no headers; IPv6 is matched by the full address', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.gql('{ limited }', from('10.1.2.2'));
      expect(res.data).toEqual({ limited: 'ok' });
      expect(res.headers['ratelimit']).toBeUndefined();
    }
    for (let i = 0; i < 3; i++)
      expect((await t.gql('{ limited }', from('2001:db8:a::1'))).data).toEqual({ limited: 'ok' });
    // Same /64, another address: limited as usual.
    expect((await t.gql('{ limited }', from('2001:db8:a::2'))).data).toEqual({ limited: 'ok' });
    const second = await t.gql('{ limited }', from('2001:db8:a::2'));
    expect(second.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED']);
    expect(await remaining('limited', 'ip:10.1.2.2')).toBe(1);
  });

  it("a policy's deny list (an address, an async function of the GraphQL arguments) refuses only its field", async () => {
    const byAddress = await t.gql('{ signup limited }', from('198.51.100.5'));
    expect(byAddress.data).toEqual({ signup: null, limited: 'ok' });
    expect(byAddress.errors?.map((e) => [e.path, e.message, e.extensions])).toEqual([
      [['signup'], 'Denied by the deny list of policy "signup"', { code: 'RATE_LIMIT_DENY_LIST' }],
    ]);
    const byArgument = await t.gql('{ signup(banned: true) }', from('203.0.113.4'));
    expect(byArgument.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMIT_DENY_LIST' }]);
    expect(await remaining('signup', 'ip:203.0.113.4')).toBe(10);
    expect((await t.gql('{ signup(banned: false) }', from('203.0.113.4'))).data).toEqual({ signup: 'ok' });
    expect(await remaining('signup', 'ip:203.0.113.4')).toBe(9);
  });

  it('a throwing list function of a fail-closed policy: its field gets RATE_LIMIT_UNAVAILABLE, reported', async () => {
    const res = await t.gql('{ open closed }', from('203.0.113.9'));
    expect(res.data).toEqual({ open: 'open', closed: null });
    expect(res.errors?.map((e) => e.extensions)).toEqual([
      { code: 'RATE_LIMIT_UNAVAILABLE', policy: 'closed', retryAfter: 1 },
    ]);
    expect(res.headers['retry-after']).toBe('1');
    expect(failures).toEqual([['lookup down', 'closed']]);
  });
});
