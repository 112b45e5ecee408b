import { type CanActivate, type ExecutionContext, Injectable, UnauthorizedException, UseGuards } from '@nestjs/common';
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

import { RateLimit, type RateLimitPolicy } from '../../lib/index.js';
import { perMinute } from '../support/policies.js';

/** The module's default policy in the GraphQL tests: one budget per user (else per IP). */
export const PER_USER: RateLimitPolicy = { name: 'per-user', algorithm: 'fixed-window', limit: 1000, window: '1m' };

@ObjectType()
export class Book {
  @Field(() => Int)
  id!: number;

  @Field()
  title!: string;
}

const args = <T>(ctx: Parameters<typeof GqlExecutionContext.create>[0]): T =>
  GqlExecutionContext.create(ctx).getArgs<T>();

/**
 * Policies on the class (every query and mutation), on queries and mutations, and on a field resolver
 * (`Book.summary`, which gets only its own). Denied fields are nullable, so the rest of the operation resolves.
 */
@Resolver(() => Book)
@RateLimit(perMinute('library', 100))
export class LibraryResolver {
  @Query(() => String)
  hello(): string {
    return 'hello';
  }

  @Query(() => String, { nullable: true })
  @RateLimit(perMinute('limited', 1))
  limited(): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit(perMinute('pair', 3))
  pair(): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit([perMinute('tight', 1), perMinute('loose', 10)])
  both(): string {
    return 'ok';
  }

  /** Costs one unit per row asked for: `cost` reads the GraphQL arguments from the ExecutionContext. */
  @Query(() => [Book], { nullable: true })
  @RateLimit({
    name: 'book-rows',
    algorithm: 'token-bucket',
    limit: 10,
    window: '1m',
    key: 'ip',
    cost: (ctx) => args<{ first: number }>(ctx).first,
  })
  books(@Args('first', { type: () => Int }) first: number): Book[] {
    return Array.from({ length: first }, (_, i) => ({ id: i + 1, title: `Book ${i + 1}` }));
  }

  /** Keyed by a function of the GraphQL arguments. */
  @Query(() => String, { nullable: true })
  @RateLimit({
    name: 'per-account',
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    key: (ctx) => `account:${args<{ account: string }>(ctx).account}`,
  })
  account(@Args('account') account: string): string {
    return account;
  }

  @Mutation(() => Int, { nullable: true })
  @RateLimit(perMinute('votes', 5))
  vote(): number {
    return 1;
  }

  @Mutation(() => Int, { nullable: true })
  @RateLimit(perMinute('comments', 3))
  comment(): number {
    return 2;
  }

  @ResolveField(() => String, { nullable: true })
  @RateLimit(perMinute('summaries', 2))
  summary(@Parent() book: Book): string {
    return `About ${book.title}`;
  }
}

/** One query at 100 per minute per IP, for exact admission under concurrency. */
@Resolver()
export class FloodResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ name: 'flood', algorithm: 'sliding-window-log', limit: 100, window: '1m', key: 'ip' })
  flood(): string {
    return 'ok';
  }
}

/** A fail-open and a fail-closed query, for the outage tests. */
@Resolver()
export class FailModeResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ name: 'open', algorithm: 'gcra', limit: 1000, window: '1m', key: 'ip', failMode: 'open' })
  open(): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit({ name: 'closed', algorithm: 'sliding-window-log', limit: 5, window: '1m', key: 'ip', failMode: 'closed' })
  closed(): string {
    return 'ok';
  }
}

/** An 'ip'-keyed and a 'user'-keyed query, one call per minute each. */
@Resolver()
export class KeysResolver {
  @Query(() => String, { nullable: true })
  @RateLimit(perMinute('by-ip', 1))
  whoami(): string {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  @RateLimit({ name: 'by-user', algorithm: 'fixed-window', limit: 1, window: '1m' })
  mine(): string {
    return 'ok';
  }
}

/** Authentication as a resolver guard (it runs after the limiter's global guard), from an `X-Token` header. */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = GqlExecutionContext.create(ctx).getContext<{
      req: { headers: Record<string, string | undefined>; user?: { id: string } };
    }>().req;
    const token = req.headers['x-token'];
    if (token === undefined) throw new UnauthorizedException();
    req.user = { id: token };
    return true;
  }
}

/** A 'user'-keyed query behind a resolver guard: the limiter keys it by the user that guard authenticates. */
@Resolver()
@UseGuards(TokenGuard)
export class GuardedResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ name: 'guarded', algorithm: 'fixed-window', limit: 1, window: '1m' })
  guarded(): string {
    return 'ok';
  }
}
