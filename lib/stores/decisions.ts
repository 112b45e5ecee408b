import type { StepResult } from '../algorithms/index.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import { NEVER_FITS, REPLY, REPLY_WIDTH } from './protocol.js';
import { RateLimitStoreReplyError } from './store-defects.js';

/**
 * The decisions of a reply of the Redis script or the PostgreSQL function: REPLY_WIDTH integers per item
 * (allowed: a REPLY code; remaining, reset_ms, retry_ms: NEVER_FITS for a cost that can never fit, the units
 * taken for an allowed lease), in the
 * order of `items`. `from` names the store in the error of a bad reply.
 */
export function decisionsFromReply(
  op: 'consume' | 'peek' | 'refund' | 'charge',
  items: readonly { policy: ResolvedPolicy; cost?: number; upTo?: number }[],
  reply: unknown,
  from: string,
): RateLimitDecision[] {
  return items.map(({ policy, cost = 0, upTo }, i) => {
    const values = Array.isArray(reply) ? reply.slice(i * REPLY_WIDTH, (i + 1) * REPLY_WIDTH).map(Number) : [];
    if (!isDecisionReply(values)) {
      throw new RateLimitStoreReplyError(`nest-rate-limit: unexpected reply from ${from}: ${JSON.stringify(reply)}`);
    }
    const [allowed, remaining, resetMs, retry] = values;
    // an allowed lease's retry_ms is the units it took
    const granted = allowed === REPLY.allowed && upTo !== undefined && op === 'consume' ? retry : 0;
    const retryAfterMs = retry === NEVER_FITS ? Infinity : granted > 0 ? 0 : retry;
    const decision = toDecision(
      policy,
      { allowed: allowed === REPLY.allowed, remaining, resetMs, retryAfterMs },
      op === 'consume' ? cost : 1,
    );
    if (allowed === REPLY.blocked) decision.blocked = true;
    if (granted > 0) decision.granted = granted;
    return decision;
  });
}

/** The 4 integers of one item's decision in a reply. */
function isDecisionReply(values: readonly number[]): values is [number, number, number, number] {
  return values.length === REPLY_WIDTH && values.every(Number.isSafeInteger);
}

/** Builds the public decision of one step. */
export function toDecision(
  policy: ResolvedPolicy,
  step: Omit<StepResult<unknown>, 'state'>,
  cost: number,
): RateLimitDecision {
  const decision: RateLimitDecision = {
    allowed: step.allowed,
    policy: policy.name,
    limit: policy.capacity,
    remaining: step.remaining,
    resetMs: step.resetMs,
    retryAfterMs: step.retryAfterMs,
  };
  if (step.retryAfterMs === Infinity) {
    decision.message = `cost ${cost} is larger than the capacity ${policy.capacity} of policy "${policy.name}", so it can never be allowed`;
  }
  return decision;
}
