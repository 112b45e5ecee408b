import { types } from 'node:util';

import type { Logger } from '../util/logger.js';

import { PolicyFunctionError } from '../policy/policy.errors.js';
import type { FailMode } from '../policy/policy.types.js';
import { ThrottledLog } from '../util/throttled-log.js';

/**
 * What the fail modes of `items` do when their store fails, in the words of the outage log; `localLimitOf`
 * gives the limit a fail-local policy has in this process.
 */
export function failModesDoing<P extends { name: string }>(
  items: readonly { policy: P; failMode: FailMode }[],
  localLimitOf?: (policy: P) => number,
): string {
  const closed = items.filter((i) => i.failMode === 'closed').map((i) => i.policy.name);
  if (closed.length > 0) return `fail closed (${[...new Set(closed)].join(', ')}): the request is refused with 503`;
  const local = items.filter((i) => i.failMode === 'local');
  if (local.length === 0) return 'fail open: the request is admitted';
  const limits = [...new Set(local.map(({ policy }) => `${policy.name}: ${localLimitOf?.(policy) ?? '?'}`))];
  const open = items.length > local.length ? '; the fail-open ones are left out' : '';
  return `fail local (${limits.join(', ')}): decided in this process on the local limits${open}`;
}

/**
 * What the fail mode of a policy whose key, cost or limit function failed does, in the words of the log: there is
 * no item to decide, so a fail-local policy is left out as a fail-open one (docs/failure.md).
 */
export function unresolvedDoing(policy: string, failMode: FailMode): string {
  if (failMode === 'closed') return `fail closed (${policy}): the request is refused with 503`;
  const mode = failMode === 'local' ? 'fail local, left out as fail open (nothing to count locally)' : 'fail open';
  return `${mode}: the request is decided without this policy`;
}

/** What a defect (a programming error of a store call, not an outage) does, in the words of the log. */
export const DEFECT =
  'a programming error, not an outage: the request fails instead of applying fail modes (fix the client or ' +
  'the store given to the module, or report it to nest-rate-limit)';

/** How long one cause of failure stays quiet in the log after it was reported. */
const QUIET_MS = 5000;
/** Causes remembered at once; a flood of distinct messages cannot grow the map without limit. */
const MAX_CAUSES = 100;

/**
 * Reports store failures: `onError` for every failure and policy, the logger at most once per cause every
 * few seconds, with the count of what it held back, so a flood of failing requests cannot flood the log.
 */
export class FailureReporter {
  private readonly recent = new ThrottledLog(QUIET_MS, undefined, MAX_CAUSES);

  constructor(
    private readonly logger: Logger,
    private readonly onError?: (error: Error, policy: string) => void,
  ) {}

  /**
   * `doing`: what the fail modes do about it, for the log line (store failures of requests, and policies whose
   * function failed).
   */
  report(error: unknown, policies: readonly string[], doing?: string): void {
    // isNativeError: an error of another realm (Node's own, under Jest's VM modules) is not `instanceof Error`
    // here, and onError gets it as it is, with its `code`.
    const err = error instanceof Error || types.isNativeError(error) ? error : new Error(String(error));
    for (const policy of policies) {
      try {
        this.onError?.(err, policy);
      } catch (hookError) {
        this.logger.error(`onError hook threw: ${(hookError as Error)?.message ?? String(hookError)}`);
      }
    }
    // What the fail modes do is part of the cause: an outage that admits and one that refuses are both told.
    // A plain Error's name says nothing: the message speaks for itself; a named error (a timeout) keeps its name.
    const said = err.name === 'Error' ? err.message : `${err.name}: ${err.message}`;
    // A key, cost, limit or settle function that threw says so itself (function, policy, Class.method): no
    // "store failure" prefix to send the reader to Redis.
    const own = err instanceof PolicyFunctionError;
    const what = err.name === 'RateLimitPolicyError' ? 'policy error' : doing === DEFECT ? 'defect' : 'store failure';
    const cause = (own ? err.message : said).slice(0, 300) + (doing === undefined ? '' : `; ${doing}`);
    this.recent.note(cause, (held) => {
      const more = held > 0 ? ` (${held} more since the last report)` : '';
      const prefix = own ? '' : `Rate limiter ${what} for policy ${policies.join(', ')}: `;
      this.logger.error(`${prefix}${cause}${more}`);
    });
  }
}
