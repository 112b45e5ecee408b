import type { ExecutionContext } from '@nestjs/common';
import {
  Args,
  Field,
  GqlExecutionContext,
  Mutation,
  ObjectType,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';

import { RateLimit, type RateLimitModuleOptions } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { GRAPHQL_DRIVERS, type GraphQLResponse, type GraphQLTestApp, startGraphQLApp } from '../support/graphql-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { accountOf, checkCredentials, type Credentials, LOGIN } from './fixtures.js';

const argsAccount = (ctx: ExecutionContext): string | undefined =>
  accountOf(GqlExecutionContext.create(ctx).getArgs<Credentials>());

@Resolver()
class LoginResolver {
  @Query(() => String)
  hello(): string {
    return 'hello';
  }

  @Mutation(() => Boolean, { nullable: true })
  @RateLimit({ ...LOGIN, key: argsAccount })
  login(@Args('account') account: string, @Args('password') password: string): boolean {
    checkCredentials({ account, password });
    return true;
  }

  @Mutation(() => Boolean, { nullable: true })
  @RateLimit({ name: 'reset', algorithm: 'fixed-window', limit: 3, window: '1h', key: argsAccount, count: 'succeeded' })
  async reset(@Args('account') account: string, @Args('password') password: string): Promise<boolean> {
    await Promise.resolve();
    checkCredentials({ account, password });
    return true;
  }
}

@ObjectType()
class Vault {
  @Field()
  account!: string;
}

/** A field resolver that counts failed openings of the vault of its parent's account. */
@Resolver(() => Vault)
class VaultResolver {
  @Query(() => Vault)
  vault(@Args('account') account: string): Vault {
    return { account };
  }

  @ResolveField(() => String, { nullable: true })
  @RateLimit({
    name: 'vault',
    algorithm: 'fixed-window',
    limit: 3,
    window: '1h',
    key: (ctx) => `account:${GqlExecutionContext.create(ctx).getRoot<Vault>().account}`,
    count: 'failed',
  })
  secret(@Parent() vault: Vault, @Args('password') password: string): string {
    checkCredentials({ account: vault.account, password });
    return 'gold';
  }
}

/** The mutation's field: 'ok' (resolved), 'failed' (the resolver's error), 'limited' (denied). */
function outcomeOf(res: GraphQLResponse, field: string): 'ok' | 'failed' | 'limited' | 'other' {
  const codes = (res.errors ?? []).map((e) => e.extensions?.code);
  if (res.status !== 200) return 'other';
  if (res.data?.[field] === true && codes.length === 0) return 'ok';
  if (codes.length !== 1 || res.data?.[field] !== null) return 'other';
  return codes[0] === 'RATE_LIMITED' ? 'limited' : 'failed';
}

const tally = (outcomes: string[]): Record<string, number> =>
  outcomes.reduce<Record<string, number>>((acc, o) => ({ ...acc, [o]: (acc[o] ?? 0) + 1 }), {});

let accounts = 0;
const newAccount = (): string => `gql${++accounts}`;

const LOGIN_MUTATION = 'mutation ($a: String!, $p: String!) { login(account: $a, password: $p) }';
const RESET_MUTATION = 'mutation ($a: String!, $p: String!) { reset(account: $a, password: $p) }';

async function sequence(t: GraphQLTestApp, mutation: string, field: string, account: string, passwords: string[]) {
  const outcomes: string[] = [];
  for (const p of passwords) outcomes.push(outcomeOf(await t.gql(mutation, { variables: { a: account, p } }), field));
  return outcomes;
}

async function remaining(t: GraphQLTestApp, policy: string, account: string): Promise<number> {
  await t.app.get(RateLimiter).refundsSettled();
  return (await t.service().peek(policy, `account:${account}`)).remaining;
}

describe.each(GRAPHQL_DRIVERS)('counting by outcome in GraphQL on %s', (driver) => {
  let redis: TestRedis;
  let t: GraphQLTestApp;
  beforeAll(async () => {
    redis = await startRedis();
    // A generous timeout: 200 decisions at once on 2 shared cores must not fall into the fail mode here.
    const rateLimit: RateLimitModuleOptions = { redis: { url: redis.url }, timeout: 2000 };
    t = await startGraphQLApp(driver, {
      resolvers: [LoginResolver, VaultResolver],
      rateLimit,
      fieldResolverEnhancers: ['guards', 'interceptors'],
    });
  });
  afterAll(async () => {
    await t.close();
    await redis.stop();
  });

  it("'failed': 200 concurrent failed logins at 5 per account are charged exactly 5 times", async () => {
    const account = newAccount();
    const responses = await Promise.all(
      Array.from({ length: 200 }, () => t.gql(LOGIN_MUTATION, { variables: { a: account, p: 'wrong' } })),
    );
    expect(tally(responses.map((r) => outcomeOf(r, 'login')))).toEqual({ failed: 5, limited: 195 });
    expect(await remaining(t, 'login', account)).toBe(0);
    expect(await sequence(t, LOGIN_MUTATION, 'login', account, ['right'])).toEqual(['limited']);
  });

  it("'failed': an error thrown by the resolver counts, a resolved login is given back", async () => {
    const account = newAccount();
    const outcomes = await sequence(t, LOGIN_MUTATION, 'login', account, ['wrong', 'crash', 'wrong', 'wrong', 'right']);
    expect(outcomes).toEqual(['failed', 'failed', 'failed', 'failed', 'ok']);
    expect(await remaining(t, 'login', account)).toBe(1);
    expect(await sequence(t, LOGIN_MUTATION, 'login', account, ['wrong', 'right'])).toEqual(['failed', 'limited']);
  });

  it("'succeeded': an async resolver's errors are given back, its successes count", async () => {
    const account = newAccount();
    const outcomes = await sequence(t, RESET_MUTATION, 'reset', account, ['wrong', 'right', 'wrong', 'right']);
    expect(outcomes).toEqual(['failed', 'ok', 'failed', 'ok']);
    expect(await remaining(t, 'reset', account)).toBe(1);
  });

  it('a field resolver counts by its own outcome (with interceptors enabled on field resolvers)', async () => {
    const account = newAccount();
    const query = `query ($a: String!) { vault(account: $a) { bad: secret(password: "wrong") good: secret(password: "right") } }`;
    const res = await t.gql(query, { variables: { a: account } });
    expect(res.data).toEqual({ vault: { bad: null, good: 'gold' } });
    expect(await remaining(t, 'vault', account)).toBe(2);
  });
});

describe.each(GRAPHQL_DRIVERS)('start-up validation of count on GraphQL field resolvers on %s', (driver) => {
  it("a counting policy on a field resolver without fieldResolverEnhancers: ['interceptors'] stops the start", async () => {
    const start = startGraphQLApp(driver, { resolvers: [VaultResolver], fieldResolverEnhancers: ['guards'] });
    await expect(start).rejects.toThrow(
      'Invalid rate-limit policy "vault" (declared on VaultResolver.secret), field "count": counts by outcome on a GraphQL field resolver',
    );
    await expect(start).rejects.toThrow(/fieldResolverEnhancers: \['guards', 'interceptors'\]/);
  });
});
