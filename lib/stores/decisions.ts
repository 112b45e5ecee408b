import type { StepResult } from '../algorithms/index.js';
import { maxWaitMs } from '../policy/max-wait.js';
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
  // A plain loop that reads the reply in place: no closure, slice or array of numbers per item.
  const decisions: RateLimitDecision[] = [];
  const values = Array.isArray(reply) ? (reply as unknown[]) : undefined;
  for (let i = 0; i < items.length; i++) {
    const { policy, cost = 0, upTo } = items[i] as (typeof items)[number];
    const at = i * REPLY_WIDTH;
    if (values === undefined || values.length < at + REPLY_WIDTH) throw badReply(from, reply);
    const allowed = Number(values[at]);
    const remaining = Number(values[at + 1]);
    const resetMs = Number(values[at + 2]);
    const retry = Number(values[at + 3]);
    if (!isSafe(allowed) || !isSafe(remaining) || !isSafe(resetMs) || !isSafe(retry)) throw badReply(from, reply);
    // an allowed lease's retry_ms is the units it took
    const granted = allowed === REPLY.allowed && upTo !== undefined && op === 'consume' ? retry : 0;
    const retryAfterMs = retry === NEVER_FITS ? Infinity : granted > 0 ? 0 : retry;
    const step = { allowed: allowed === REPLY.allowed, remaining, resetMs, retryAfterMs };
    const units = op === 'consume' ? cost : 1;
    // A block of RateLimitService.block waits what the service set, any length: never bounded here. A policy
    // with a block of its own answers the longer of its step's wait and the block, which its longest wait
    // covers (maxWaitMs), as the in-process stores bound the step's wait before they add the block; a key
    // under a service block longer than that is then answered with the policy's longest wait, and stays blocked.
    const blocked = allowed === REPLY.blocked;
    const decision =
      blocked && policy.blockMs === undefined
        ? unboundedDecision(policy, step, units)
        : toDecision(policy, step, units);
    if (blocked) decision.blocked = true;
    if (granted > 0) decision.granted = granted;
    decisions.push(decision);
  }
  return decisions;
}

const isSafe = Number.isSafeInteger;

function badReply(from: string, reply: unknown): RateLimitStoreReplyError {
  return new RateLimitStoreReplyError(`nest-rate-limit: unexpected reply from ${from}: ${JSON.stringify(reply)}`);
}

/**
 * Decisions whose store asked for a longer wait than their policy ever could (a writer whose clock runs ahead,
 * state of another shape), with that wait: the engine reports them (DecisionEngine, `decided`). Weak: nothing
 * is kept once the decision is gone.
 */
const overlong = new WeakMap<RateLimitDecision, number>();

/** The wait the store asked for, when toDecision bounded it to its policy's longest; else undefined. */
export const overlongWait = (decision: RateLimitDecision): number | undefined => overlong.get(decision);

/**
 * Builds the public decision of one step, its wait and reset bounded by the longest wait its policy could ever
 * ask (maxWaitMs): a stored value beyond what the policy could write never locks a client out for longer. A
 * cost that never fits (Infinity) is not a wait and stays.
 */
export function toDecision(
  policy: ResolvedPolicy,
  step: Omit<StepResult<unknown>, 'state'>,
  cost: number,
): RateLimitDecision {
  const decision = unboundedDecision(policy, step, cost);
  const { retryAfterMs, resetMs } = decision;
  const longestMs = maxWaitMs(policy);
  if (resetMs > longestMs) decision.resetMs = longestMs;
  if (retryAfterMs !== Infinity && retryAfterMs > longestMs) {
    decision.retryAfterMs = longestMs;
    overlong.set(decision, retryAfterMs);
  }
  return decision;
}

/** The public decision of one step, as the step says. */
function unboundedDecision(
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
