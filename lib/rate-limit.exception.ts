import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

import { EMPTY } from 'rxjs';

import { RateLimitDroppedEvent } from './contexts/context-adapter.js';
import type { RateLimitDecision } from './policy/policy.types.js';

/**
 * 429 Too Many Requests. Body: `{ statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED', message,
 * policy, retryAfter }`, retryAfter in whole seconds (absent when the request's cost can never fit the policy).
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
        code: 'RATE_LIMITED',
        message: deniedMessage(decision, retryAfter),
        policy: decision.policy,
        ...(retryAfter === null ? {} : { retryAfter }),
      },
      HttpStatus.TOO_MANY_REQUESTS,
    );
    this.retryAfter = retryAfter;
  }
}

/** The message of a denial, the same in every context. */
export function deniedMessage(decision: RateLimitDecision, retryAfter: number | null): string {
  return decision.message ?? `Rate limit "${decision.policy}" exceeded; retry in ${retryAfter} s`;
}

/** The message of a fail-closed outage, the same in every context. */
export function unavailableMessage(policy: string): string {
  return `Rate limiter unavailable; policy "${policy}" fails closed`;
}

/**
 * 503 Service Unavailable: the limiter's store failed and the policy fails closed.
 * Body: `{ statusCode: 503, error: 'Service Unavailable', code: 'RATE_LIMIT_UNAVAILABLE', message, policy, retryAfter }`.
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
        code: 'RATE_LIMIT_UNAVAILABLE',
        message: unavailableMessage(policy),
        policy,
        retryAfter,
      },
      HttpStatus.SERVICE_UNAVAILABLE,
    );
  }
}

/** The message of a request refused by a deny list, the same in every context. */
export function denyListMessage(policy: string | undefined): string {
  return policy === undefined ? 'Denied by the deny list' : `Denied by the deny list of policy "${policy}"`;
}

/**
 * 403 Forbidden: a deny list (of the module or of a policy of the route) names the request; nothing was consumed.
 * Body: `{ statusCode: 403, error: 'Forbidden', code: 'RATE_LIMIT_DENY_LIST', message }`, no Retry-After.
 * @example throw new RateLimitDenyListException()
 */
export class RateLimitDenyListException extends HttpException {
  constructor(message = denyListMessage(undefined)) {
    super(
      { statusCode: HttpStatus.FORBIDDEN, error: 'Forbidden', code: 'RATE_LIMIT_DENY_LIST', message },
      HttpStatus.FORBIDDEN,
    );
  }
}

/**
 * Answers RateLimitExceededException and RateLimitUnavailableException with their status and body, and with
 * `Retry-After` — also when your own code throws them (after `RateLimitService.consume`, say) — and turns a
 * microservice event the limiter dropped into an empty result (nobody waits for an answer). Registered by
 * RateLimitModule as APP_FILTER; a filter of yours that catches them first takes over.
 */
@Catch(RateLimitExceededException, RateLimitUnavailableException, RateLimitDroppedEvent)
export class RateLimitExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    exception: RateLimitExceededException | RateLimitUnavailableException | RateLimitDroppedEvent,
    host: ArgumentsHost,
  ): unknown {
    if (exception instanceof RateLimitDroppedEvent) {
      if (host.getType() === 'rpc') return EMPTY;
      throw exception;
    }
    if (host.getType() !== 'http') throw exception;
    const res = host.switchToHttp().getResponse<object>();
    const adapter = this.adapterHost.httpAdapter;
    if (exception.retryAfter !== null) adapter.setHeader(res, 'Retry-After', String(exception.retryAfter));
    adapter.reply(res, exception.getResponse(), exception.getStatus());
    return undefined;
  }
}
