import { HttpException, HttpStatus } from '@nestjs/common';

import type { Criticality } from '../policy/criticality.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import { chosenWait } from './retry-after.js';

/**
 * The body of the limiter's 429 and 503 HTTP responses. 'nest' (the default): Nest's HttpException shape,
 * `{ statusCode, error, code, message, policy, retryAfter? }` as application/json. 'problem': RFC 9457
 * application/problem+json with the IETF RateLimit draft's problem types and `violated-policies`.
 * @example RateLimitModule.forRoot({ errors: 'problem' })
 */
export type RateLimitErrors = 'nest' | 'problem';

/** The problem types of the IETF RateLimit draft (draft-ietf-httpapi-ratelimit-headers, section "Problem Types"). */
const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
const TEMPORARY_REDUCED_CAPACITY = 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';

/**
 * An RFC 9457 problem details body of the limiter (`errors: 'problem'`), sent as application/problem+json.
 * `title` is the problem type's registered title; `retryAfter` is whole seconds, as in `Retry-After`.
 * @example { type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', title: 'Quota Exceeded', status: 429, detail: 'Rate limit "api" exceeded; retry in 12 s', 'violated-policies': ['api'], retryAfter: 12 }
 */
export interface RateLimitProblem {
  readonly type: typeof QUOTA_EXCEEDED | typeof TEMPORARY_REDUCED_CAPACITY;
  readonly title: 'Quota Exceeded' | 'Temporary Reduced Capacity';
  readonly status: 429 | 503;
  readonly detail: string;
  /** The names of the policies that refused the request (a 503: the fail-closed policy whose store failed). */
  readonly 'violated-policies': readonly string[];
  /** Absent on a 429 whose cost can never fit: retrying cannot help. */
  readonly retryAfter?: number;
  /** `'OVERLOADED'` on a 503 of load shedding (whose `violated-policies` is empty: no policy refused it). */
  readonly code?: 'OVERLOADED';
}

/**
 * The JSON body of the limiter's HTTP refusals in Nest's HttpException shape: 429 and 503 with `errors: 'nest'`
 * (the default; `errors: 'problem'` sends RateLimitProblem instead), and the 403 of a deny list always. `code`
 * (or `statusCode`) tells them apart; `retryAfter` is whole seconds, as in `Retry-After`.
 * @example if (body.code === 'RATE_LIMITED') setTimeout(retry, (body.retryAfter ?? 60) * 1000)
 */
export type RateLimitErrorBody =
  | {
      readonly statusCode: 429;
      readonly error: 'Too Many Requests';
      readonly code: 'RATE_LIMITED';
      readonly message: string;
      /** The name of the policy that denied (of several, the one with the longest wait). */
      readonly policy: string;
      /** Absent when the request's cost can never fit the policy: retrying cannot help. */
      readonly retryAfter?: number;
    }
  | {
      readonly statusCode: 503;
      readonly error: 'Service Unavailable';
      readonly code: 'RATE_LIMIT_UNAVAILABLE';
      readonly message: string;
      /** The fail-closed policy whose store failed. */
      readonly policy: string;
      readonly retryAfter: number;
    }
  | {
      readonly statusCode: 503;
      readonly error: 'Service Unavailable';
      readonly code: 'OVERLOADED';
      readonly message: string;
      /** The handler's criticality: load shedding refused it before the more critical ones. */
      readonly criticality: Criticality;
      readonly retryAfter: number;
    }
  | {
      readonly statusCode: 403;
      readonly error: 'Forbidden';
      readonly code: 'RATE_LIMIT_DENY_LIST';
      readonly message: string;
    };

/** The body of one of the limiter's refusals, by its `code`. */
type ErrorBodyOf<C extends RateLimitErrorBody['code']> = Extract<RateLimitErrorBody, { code: C }>;

/**
 * 429 Too Many Requests. Body (a RateLimitErrorBody): `{ statusCode: 429, error: 'Too Many Requests',
 * code: 'RATE_LIMITED', message, policy, retryAfter }`, retryAfter in whole seconds (absent when the request's
 * cost can never fit the policy); with `errors: 'problem'`, the module's filter sends `problem()` instead.
 * `decision` is the one that matters most (the longest wait); `violatedPolicies` names every policy that
 * denied, default `decision`'s alone.
 * @example throw new RateLimitExceededException(decision)
 */
export class RateLimitExceededException extends HttpException {
  /** Whole seconds for `Retry-After`; null when the cost can never fit. */
  readonly retryAfter: number | null;
  /** The names of every enforced policy that denied the request, in the route's order. */
  readonly violatedPolicies: readonly string[];

  constructor(
    readonly decision: RateLimitDecision,
    violatedPolicies: readonly string[] = [decision.policy],
  ) {
    const { retryAfter } = chosenWait({ denials: [decision] });
    const body: ErrorBodyOf<'RATE_LIMITED'> = {
      statusCode: HttpStatus.TOO_MANY_REQUESTS,
      error: 'Too Many Requests',
      code: 'RATE_LIMITED',
      message: deniedMessage(decision, retryAfter),
      policy: decision.policy,
      ...(retryAfter === null ? {} : { retryAfter }),
    };
    super(body, HttpStatus.TOO_MANY_REQUESTS);
    this.retryAfter = retryAfter;
    this.violatedPolicies = violatedPolicies.length > 0 ? violatedPolicies : [decision.policy];
  }

  /** The RFC 9457 body of this denial: problem type quota-exceeded. */
  problem(): RateLimitProblem {
    return {
      type: QUOTA_EXCEEDED,
      title: 'Quota Exceeded',
      status: HttpStatus.TOO_MANY_REQUESTS,
      detail: deniedMessage(this.decision, this.retryAfter),
      'violated-policies': this.violatedPolicies,
      ...(this.retryAfter === null ? {} : { retryAfter: this.retryAfter }),
    };
  }
}

/** The message of a denial, the same in every context. */
export function deniedMessage(decision: RateLimitDecision, retryAfter: number | null): string {
  return decision.message ?? `Rate limit "${decision.policy}" exceeded; retry in ${retryAfter} s`;
}

/** A 503's RFC 9457 body: problem type temporary-reduced-capacity. */
const reducedCapacity = (detail: string, violated: readonly string[], retryAfter: number): RateLimitProblem => ({
  type: TEMPORARY_REDUCED_CAPACITY,
  title: 'Temporary Reduced Capacity',
  status: HttpStatus.SERVICE_UNAVAILABLE,
  detail,
  'violated-policies': violated,
  retryAfter,
});

/** The message of a fail-closed outage, the same in every context. */
export function unavailableMessage(policy: string): string {
  return `Rate limiter unavailable; policy "${policy}" fails closed`;
}

/**
 * 503 Service Unavailable: the limiter's store failed and the policy fails closed.
 * Body (a RateLimitErrorBody): `{ statusCode: 503, error: 'Service Unavailable', code: 'RATE_LIMIT_UNAVAILABLE',
 * message, policy, retryAfter }`; with `errors: 'problem'`, the module's filter sends `problem()` instead.
 * @example throw new RateLimitUnavailableException('login', 1)
 */
export class RateLimitUnavailableException extends HttpException {
  constructor(
    readonly policy: string,
    readonly retryAfter: number,
  ) {
    const body: ErrorBodyOf<'RATE_LIMIT_UNAVAILABLE'> = {
      statusCode: HttpStatus.SERVICE_UNAVAILABLE,
      error: 'Service Unavailable',
      code: 'RATE_LIMIT_UNAVAILABLE',
      message: unavailableMessage(policy),
      policy,
      retryAfter,
    };
    super(body, HttpStatus.SERVICE_UNAVAILABLE);
  }

  /** The RFC 9457 body of this outage: problem type temporary-reduced-capacity, naming the fail-closed policy. */
  problem(): RateLimitProblem {
    return reducedCapacity(unavailableMessage(this.policy), [this.policy], this.retryAfter);
  }
}

/** The message of a request refused by load shedding, the same in every context. */
export function overloadedMessage(criticality: Criticality): string {
  return `Service overloaded; ${criticality} requests are refused for now`;
}

/**
 * 503 Service Unavailable: load shedding (the `shedding` option) refused the request; nothing was charged.
 * Body (a RateLimitErrorBody): `{ statusCode: 503, error: 'Service Unavailable', code: 'OVERLOADED', message,
 * criticality, retryAfter }`; with `errors: 'problem'`, the module's filter sends `problem()` instead.
 * @example throw new RateLimitOverloadedException('sheddable', 1)
 */
export class RateLimitOverloadedException extends HttpException {
  constructor(
    readonly criticality: Criticality,
    readonly retryAfter: number,
  ) {
    const body: ErrorBodyOf<'OVERLOADED'> = {
      statusCode: HttpStatus.SERVICE_UNAVAILABLE,
      error: 'Service Unavailable',
      code: 'OVERLOADED',
      message: overloadedMessage(criticality),
      criticality,
      retryAfter,
    };
    super(body, HttpStatus.SERVICE_UNAVAILABLE);
  }

  /** The RFC 9457 body: problem type temporary-reduced-capacity, `code: 'OVERLOADED'`, no policy named. */
  problem(): RateLimitProblem {
    return { ...reducedCapacity(overloadedMessage(this.criticality), [], this.retryAfter), code: 'OVERLOADED' };
  }
}

/** The message of a request refused by a deny list, the same in every context. */
export function denyListMessage(policy: string | undefined): string {
  return policy === undefined ? 'Denied by the deny list' : `Denied by the deny list of policy "${policy}"`;
}

/**
 * 403 Forbidden: a deny list (of the module or of a policy of the route) names the request; nothing was consumed.
 * Body (a RateLimitErrorBody): `{ statusCode: 403, error: 'Forbidden', code: 'RATE_LIMIT_DENY_LIST', message }`,
 * no Retry-After.
 * @example throw new RateLimitDenyListException()
 */
export class RateLimitDenyListException extends HttpException {
  constructor(message = denyListMessage(undefined)) {
    const body: ErrorBodyOf<'RATE_LIMIT_DENY_LIST'> = {
      statusCode: HttpStatus.FORBIDDEN,
      error: 'Forbidden',
      code: 'RATE_LIMIT_DENY_LIST',
      message,
    };
    super(body, HttpStatus.FORBIDDEN);
  }
}
