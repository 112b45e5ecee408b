import { Field, ObjectType, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';

import { RateLimit } from '../../lib/index.js';
import { GRAPHQL_DRIVERS, startGraphQLApp } from '../support/graphql-app.js';
import { perMinute } from '../support/policies.js';

@Resolver()
class BadPolicyResolver {
  @Query(() => String)
  @RateLimit({ name: 'broken', algorithm: 'fixed-window', limit: 0, window: '1m' })
  broken(): string {
    return 'never';
  }
}

@ObjectType()
class Author {
  @Field()
  name!: string;
}

@Resolver(() => Author)
class AuthorResolver {
  @Query(() => Author)
  author(): Author {
    return { name: 'Ada' };
  }

  @ResolveField(() => String)
  @RateLimit(perMinute('bios', 5))
  bio(@Parent() author: Author): string {
    return `${author.name} wrote`;
  }
}

describe.each(GRAPHQL_DRIVERS)('start-up validation of GraphQL policies on %s', (driver) => {
  it('a bad policy on a resolver method stops the start, naming Resolver.method, the policy and the field', async () => {
    await expect(startGraphQLApp(driver, { resolvers: [BadPolicyResolver] })).rejects.toThrow(
      'Invalid rate-limit policy "broken" (declared on BadPolicyResolver.broken), field "limit": must be an integer >= 1 or a function of the request, got 0',
    );
  });

  it("a @RateLimit on a field resolver without fieldResolverEnhancers: ['guards'] stops the start", async () => {
    const start = startGraphQLApp(driver, { resolvers: [AuthorResolver], fieldResolverEnhancers: ['interceptors'] });
    await expect(start).rejects.toThrow(/AuthorResolver\.bio/);
    await expect(start).rejects.toThrow(/fieldResolverEnhancers: \['guards'\]/);
  });

  it("with fieldResolverEnhancers: ['guards'] the same resolver starts and its field is limited", async () => {
    const t = await startGraphQLApp(driver, { resolvers: [AuthorResolver], fieldResolverEnhancers: ['guards'] });
    try {
      const res = await t.gql('{ author { name a: bio b: bio } }');
      expect(res.data).toEqual({ author: { name: 'Ada', a: 'Ada wrote', b: 'Ada wrote' } });
      expect((await t.service().peek('bios', 'ip:127.0.0.1')).remaining).toBe(3);
    } finally {
      await t.close();
    }
  });
});
