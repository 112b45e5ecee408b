import * as nestCommon from '@nestjs/common';

import type { Criticality } from '../policy/criticality.js';

/** What a denied, unavailable, deny-listed or shed resolver's GraphQL error carries in `extensions`, exactly. */
export type RateLimitGraphQLExtensions =
  | { readonly code: 'RATE_LIMITED'; readonly policy: string; readonly retryAfter?: number }
  | { readonly code: 'RATE_LIMIT_UNAVAILABLE'; readonly policy: string; readonly retryAfter: number }
  | { readonly code: 'RATE_LIMIT_DENY_LIST' }
  | { readonly code: 'OVERLOADED'; readonly criticality: Criticality; readonly retryAfter: number };

/**
 * Nest's IntrinsicException (Nest 11 and later), read from the module's namespace: Nest 10 has none, and a
 * named import of it would fail to link there (its exception handlers log every error; a plain Error then).
 */
function intrinsicException(): ErrorConstructor {
  return (nestCommon as unknown as { IntrinsicException?: ErrorConstructor }).IntrinsicException ?? Error;
}

/**
 * The error a denied (or fail-closed, store-down) resolver throws. graphql-js turns it into a GraphQLError
 * located at the resolver's path and copies `extensions` from it, so the client gets
 * `{ message, path, extensions: { code, policy, retryAfter } }` while the operation's other fields resolve.
 *
 * Why not a GraphQLError or an HttpException: Nest's Apollo driver rewrites HttpExceptions into
 * `INTERNAL_SERVER_ERROR` errors with an `originalError` extension, and Nest's external exception filter logs
 * every error that is not an IntrinsicException — a denial is an expected answer, not an application error,
 * so it must not fill the logs. This class is an IntrinsicException with `extensions`: neither driver changes
 * it (Apollo only adds `stacktrace` outside production unless `includeStacktraceInErrorResponses: false`).
 * Import it from `nest-rate-limit/graphql` to tell a rate-limit error apart in a `formatError` of yours.
 * @example formatError: (formatted, error) => (unwrapResolverError(error) instanceof RateLimitGraphQLError ? { ...formatted, message: 'Slow down' } : formatted)
 */
export class RateLimitGraphQLError extends intrinsicException() {
  constructor(
    message: string,
    readonly extensions: RateLimitGraphQLExtensions,
  ) {
    super(message);
    this.name = 'RateLimitGraphQLError';
  }
}
