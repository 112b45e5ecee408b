import { type ExecutionContext, Logger } from '@nestjs/common';
import type { HttpAdapterHost, ModuleRef } from '@nestjs/core';
// What users import to recognise a rate-limit error in a `formatError` of theirs.
import { RateLimitGraphQLError, type RateLimitGraphQLExtensions } from 'nest-rate-limit/graphql';

import { graphqlAdapter } from '../../lib/contexts/graphql.adapter.js';
import { compileTrust } from '../../lib/keys/client-ip.js';
import type { RateLimitDecision } from '../../lib/policy/policy.types.js';

/** What `fn` threw. */
function thrown(fn: () => never): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('RateLimitGraphQLError of nest-rate-limit/graphql', () => {
  it('is the class of what a denied or deny-listed resolver throws, with its extensions', async () => {
    const adapter = await graphqlAdapter({
      trust: compileTrust(false),
      ipv6Prefix: 64,
      logger: new Logger('RateLimit'),
      httpAdapterHost: {} as HttpAdapterHost,
      moduleRef: {} as ModuleRef,
    });
    // deny() and forbid() read nothing of the context.
    const ctx = {} as ExecutionContext;
    const decision: RateLimitDecision = {
      allowed: false,
      policy: 'books',
      limit: 1,
      remaining: 0,
      resetMs: 3000,
      retryAfterMs: 3000,
    };
    const denied = thrown(() =>
      adapter.deny(ctx, { code: 'RATE_LIMITED', message: 'slow down', policy: 'books', retryAfter: 3 }, decision),
    );
    const refused = thrown(() => adapter.forbid(ctx, { code: 'RATE_LIMIT_DENY_LIST', message: 'no', policy: 'books' }));
    expect(denied).toBeInstanceOf(RateLimitGraphQLError);
    expect(refused).toBeInstanceOf(RateLimitGraphQLError);
    expect(denied).toBeInstanceOf(Error);
    const extensions: RateLimitGraphQLExtensions[] = [denied, refused].map(
      (e) => (e as RateLimitGraphQLError).extensions,
    );
    expect(extensions).toEqual([
      { code: 'RATE_LIMITED', policy: 'books', retryAfter: 3 },
      { code: 'RATE_LIMIT_DENY_LIST' },
    ]);
    expect((denied as RateLimitGraphQLError).name).toBe('RateLimitGraphQLError');
  });
});
