import { Args, GqlExecutionContext, Int, Query, Resolver } from '@nestjs/graphql';

import { RateLimit } from '../lib/index.js';

/**
 * A small GraphQL API (Apollo, code first, at POST /graphql). `per-user` (the default) applies to every query;
 * `greetings` adds a cost that follows the query: asking for `count` greetings costs `count` units.
 */
@Resolver()
export class GreetingResolver {
  @Query(() => String, { description: 'One greeting; counts against per-user.' })
  hello(@Args('name', { defaultValue: 'world' }) name: string): string {
    return `hello, ${name}`;
  }

  @Query(() => [String], {
    nullable: true,
    description: 'Several greetings: 30 per minute per client, each one a unit.',
  })
  @RateLimit({
    name: 'graphql-greetings',
    algorithm: 'token-bucket',
    limit: 30,
    window: '1m',
    key: 'ip',
    cost: (ctx) => Math.min(GqlExecutionContext.create(ctx).getArgs<{ count?: number }>().count ?? 1, 100),
  })
  greetings(@Args('count', { type: () => Int, defaultValue: 1 }) count: number): string[] {
    return Array.from({ length: Math.min(count, 100) }, (_, i) => `hello #${i + 1}`);
  }
}
