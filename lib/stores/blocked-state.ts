import { maxWaitMs } from '../policy/max-wait.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/**
 * A key under a block (a policy's `block` after a denial, or RateLimitService.block): denied until `untilMs`,
 * with the algorithm state it had, which the block leaves as it was. Stores keep it in the key's own entry,
 * so that a key without a block costs nothing more to read.
 */
export class Blocked {
  constructor(
    readonly untilMs: number,
    readonly state: unknown,
  ) {}
}

/** The algorithm state of a stored value and the end of its block (0: none). */
export function unwrapBlock(value: unknown): [state: unknown, untilMs: number] {
  return value instanceof Blocked ? [value.state, value.untilMs] : [value, 0];
}

/** The value to store for `state` with a block until `untilMs` (none when it has ended), and for how long. */
export function withBlock(state: unknown, resetMs: number, untilMs: number, nowMs: number): [unknown, number] {
  if (untilMs <= nowMs) return [state, resetMs];
  return [new Blocked(untilMs, state), Math.max(resetMs, untilMs - nowMs)];
}

/**
 * The decision for a key under a block: denied, nothing left, until the block ends. A policy with a block of its
 * own tells at most its longest wait (a block stored by a clock ahead), as the shared stores' replies do
 * (decisions.ts); a block of RateLimitService.block on another policy waits what the service set.
 */
export function blockedDecision(policy: ResolvedPolicy, untilMs: number, nowMs: number): RateLimitDecision {
  const waitMs = policy.blockMs === undefined ? untilMs - nowMs : Math.min(untilMs - nowMs, maxWaitMs(policy));
  return {
    allowed: false,
    blocked: true,
    policy: policy.name,
    limit: policy.capacity,
    remaining: 0,
    resetMs: waitMs,
    retryAfterMs: waitMs,
  };
}

/** A denial that starts a block of `blockMs`: the key waits for the block (or for ever, if it never fits). */
export function blockingDenial(decision: RateLimitDecision, blockMs: number): RateLimitDecision {
  return {
    ...decision,
    blocked: true,
    resetMs: Math.max(decision.resetMs, blockMs),
    retryAfterMs: Math.max(decision.retryAfterMs, blockMs),
  };
}
