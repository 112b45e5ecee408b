import { HttpException, HttpStatus } from '@nestjs/common';

import type { RateLimitDecision } from './policy/policy.types.js';

/**
 * 429 Too Many Requests. Body: `{ statusCode: 429, error: 'Too Many Requests', message, policy, retryAfter }`,
 * retryAfter in whole seconds (null when the request's cost can never fit the policy).
 * @example throw new RateLimitExceededException(decision)
 */
export class RateLimitExceededException extends HttpException {
  constructor(readonly decision: RateLimitDecision) {
    const retryAfter = Number.isFinite(decision.retryAfterMs)
      ? Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
      : null;
    super(
      {
        statusCode: HttpStatus.TOO_MANY_REQUESTS,
        error: 'Too Many Requests',
        message:
          decision.message ??
          `Rate limit "${decision.policy}" exceeded: ${decision.limit} per window; retry in ${retryAfter} s`,
        policy: decision.policy,
        retryAfter,
      },
      HttpStatus.TOO_MANY_REQUESTS,
    );
  }
}

/**
 * 503 Service Unavailable: the limiter's store failed and the policy fails closed.
 * Body: `{ statusCode: 503, error: 'Service Unavailable', message, policy, retryAfter }`.
 */
export class RateLimitUnavailableException extends HttpException {
  constructor(
    readonly policy: string,
    readonly retryAfter: number,
  ) {
    super(
      {
        statusCode: HttpStatus.SERVICE_UNAVAILABLE,
        error: 'Service Unavailable',
        message: `Rate limiter unavailable; policy "${policy}" fails closed`,
        policy,
        retryAfter,
      },
      HttpStatus.SERVICE_UNAVAILABLE,
    );
  }
}
