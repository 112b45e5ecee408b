import { type ArgumentsHost, Catch, type ExceptionFilter, Inject } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

import { EMPTY } from 'rxjs';

import { RateLimitDroppedEvent } from '../contexts/context-adapter.js';
import { RateLimitGraphQLError } from '../contexts/graphql-error.js';
import {
  RateLimitExceededException,
  RateLimitOverloadedException,
  RateLimitUnavailableException,
} from '../responses/rate-limit-exceptions.js';
import { RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';

/**
 * Answers RateLimitExceededException, RateLimitUnavailableException and RateLimitOverloadedException with their status and body (the
 * `errors` option's: Nest's shape, or problem details as application/problem+json), and with `Retry-After` —
 * also when your own code throws them (after `RateLimitService.consume`, say) — and turns a microservice
 * event the limiter dropped into an empty result (nobody waits for an answer), and a resolver's
 * RateLimitGraphQLError into the resolver's result, which graphql-js reports as the field's error (thrown on,
 * Nest 10 logs it as an unhandled error with its stack; a denial is not an error of the app). Registered by
 * RateLimitModule as APP_FILTER; a filter of yours that catches them first takes over (`exception.problem()`
 * gives the body).
 */
@Catch(
  RateLimitExceededException,
  RateLimitUnavailableException,
  RateLimitOverloadedException,
  RateLimitDroppedEvent,
  RateLimitGraphQLError,
)
export class RateLimitExceptionFilter implements ExceptionFilter {
  /** Checked at start by the limiter (limiter-settings.ts), which stops the application on a bad value. */
  private readonly problems: boolean;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(RATE_LIMIT_OPTIONS) options: RateLimitModuleOptions,
  ) {
    this.problems = options.errors === 'problem';
  }

  catch(
    exception:
      | RateLimitExceededException
      | RateLimitUnavailableException
      | RateLimitOverloadedException
      | RateLimitDroppedEvent
      | RateLimitGraphQLError,
    host: ArgumentsHost,
  ): unknown {
    // graphql-js treats an Error a resolver returns as the error it throws: located at the field, other fields
    // resolved, the same answer as before, and nothing for Nest's external exception filter to log.
    if (exception instanceof RateLimitGraphQLError) {
      if (host.getType<string>() === 'graphql') return exception;
      throw exception;
    }
    if (exception instanceof RateLimitDroppedEvent) {
      if (host.getType() === 'rpc') return EMPTY;
      throw exception;
    }
    if (host.getType() !== 'http') throw exception;
    const res = host.switchToHttp().getResponse<object>();
    const adapter = this.adapterHost.httpAdapter;
    if (exception.retryAfter !== null) adapter.setHeader(res, 'Retry-After', String(exception.retryAfter));
    if (!this.problems) {
      adapter.reply(res, exception.getResponse(), exception.getStatus());
      return undefined;
    }
    adapter.setHeader(res, 'Content-Type', 'application/problem+json');
    // As text: Nest 11's Express adapter replaces the Content-Type of an object body with a status >= 400 by
    // application/json (and logs a warning about it).
    adapter.reply(res, JSON.stringify(exception.problem()), exception.getStatus());
    return undefined;
  }
}
