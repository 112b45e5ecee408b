import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

import type { RateLimitDecision } from './policy/policy.types.js';

/**
 * 429 Too Many Requests. Body: `{ statusCode: 429, error: 'Too Many Requests', message, policy, retryAfter }`,
 * retryAfter in whole seconds (null when the request's cost can never fit the policy).
 * @example throw new RateLimitExceededException(decision)
 */
export class RateLimitExceededException extends HttpException {
  /** Whole seconds for `Retry-After`; null when the cost can never fit. */
  readonly retryAfter: number | null;

  constructor(readonly decision: RateLimitDecision) {
    const retryAfter = Number.isFinite(decision.retryAfterMs)
      ? Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
      : null;
    super(
      {
        statusCode: HttpStatus.TOO_MANY_REQUESTS,
        error: 'Too Many Requests',
        message: decision.message ?? `Rate limit "${decision.policy}" exceeded; retry in ${retryAfter} s`,
        policy: decision.policy,
        retryAfter,
      },
      HttpStatus.TOO_MANY_REQUESTS,
    );
    this.retryAfter = retryAfter;
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

/**
 * Answers RateLimitExceededException and RateLimitUnavailableException with their status and body, and with
 * `Retry-After` — also when your own code throws them (after `RateLimitService.consume`, say). Registered by
 * RateLimitModule as APP_FILTER; a filter of yours that catches them first takes over.
 */
@Catch(RateLimitExceededException, RateLimitUnavailableException)
export class RateLimitExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: RateLimitExceededException | RateLimitUnavailableException, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const res = host.switchToHttp().getResponse<object>();
    const adapter = this.adapterHost.httpAdapter;
    if (exception.retryAfter !== null) adapter.setHeader(res, 'Retry-After', String(exception.retryAfter));
    adapter.reply(res, exception.getResponse(), exception.getStatus());
  }
}
