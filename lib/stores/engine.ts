import { ALGORITHM_STEPS, type StepResult } from '../algorithms/index.js';
import type { RateLimitAlgorithm, RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/** State access for the engine: the memory store's map, or any other synchronous table. */
export interface StateTable {
  get(key: string, algorithm: RateLimitAlgorithm): unknown;
  /** Stores `state` for `ttlMs`; undefined state or ttlMs <= 0 deletes the key. */
  set(key: string, algorithm: RateLimitAlgorithm, state: unknown, ttlMs: number): void;
}

/** An item whose identity has been turned into its storage key. */
export interface KeyedItem {
  readonly policy: ResolvedPolicy;
  readonly key: string;
  readonly cost: number;
  readonly shadow?: boolean;
}

/** retry_ms of a cost that can never fit, in the replies of the Redis script and the PostgreSQL function. */
export const NEVER_FITS = -1;

/**
 * The decisions of a reply of the Redis script or the PostgreSQL function: 4 integers per item (allowed 0/1,
 * remaining, reset_ms, retry_ms), in the order of `items`. `from` names the store in the error of a bad reply.
 */
export function decisionsFromReply(
  op: 'consume' | 'peek' | 'refund',
  items: readonly { policy: ResolvedPolicy; cost?: number }[],
  reply: unknown,
  from: string,
): RateLimitDecision[] {
  return items.map(({ policy, cost = 0 }, i) => {
    const values = Array.isArray(reply) ? reply.slice(i * 4, i * 4 + 4).map(Number) : [];
    if (values.length !== 4 || !values.every(Number.isSafeInteger)) {
      throw new Error(`nestjs-rate-limit: unexpected reply from ${from}: ${JSON.stringify(reply)}`);
    }
    const [allowed, remaining, resetMs, retry] = values;
    const retryAfterMs = retry === NEVER_FITS ? Infinity : retry;
    return toDecision(
      policy,
      { allowed: allowed === 1, remaining, resetMs, retryAfterMs },
      op === 'consume' ? cost : 1,
    );
  });
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

/**
 * Decides every item together and writes only if every enforced item is allowed (then every allowed item:
 * a shadow item that would deny consumes nothing, and never denies the others). Items on the same key see
 * the effect of the items before them. When the request is denied, the items that would have passed report
 * the key as it is (nothing consumed). The Redis script implements the same procedure in Lua.
 */
export function consumeAll(items: readonly KeyedItem[], nowMs: number, table: StateTable): RateLimitDecision[] {
  const working = new Map<string, unknown>();
  const original = new Map<string, unknown>();
  const steps: StepResult<unknown>[] = [];
  let allAllowed = true;
  for (const item of items) {
    const { policy, key, cost } = item;
    if (!original.has(key)) original.set(key, table.get(key, policy.algorithm));
    const state = working.has(key) ? working.get(key) : original.get(key);
    const step = ALGORITHM_STEPS[policy.algorithm].step(state, policy, nowMs, cost);
    steps.push(step);
    if (!step.allowed) allAllowed &&= item.shadow === true;
    else if (cost > 0) working.set(key, step.state);
  }
  if (allAllowed) {
    const written = new Map<string, number>();
    items.forEach((item, i) => {
      if (item.cost > 0 && steps[i].allowed) written.set(item.key, i);
    });
    for (const [key, i] of written) table.set(key, items[i].policy.algorithm, steps[i].state, steps[i].resetMs);
    return items.map((item, i) => toDecision(item.policy, steps[i], item.cost));
  }
  return items.map((item, i) => {
    if (!steps[i].allowed) return toDecision(item.policy, steps[i], item.cost);
    const unchanged = ALGORITHM_STEPS[item.policy.algorithm].step(original.get(item.key), item.policy, nowMs, 0);
    return toDecision(item.policy, unchanged, 0);
  });
}

/** How a key stands: `remaining` now, allowed when a request of cost 1 would pass, and if not, when it would. */
export function peekState(policy: ResolvedPolicy, state: unknown, nowMs: number): RateLimitDecision {
  const algorithm = ALGORITHM_STEPS[policy.algorithm];
  const now = algorithm.step(state, policy, nowMs, 0);
  if (now.remaining >= 1) return toDecision(policy, now, 0);
  const next = algorithm.step(state, policy, nowMs, 1);
  return toDecision(policy, { ...now, allowed: false, retryAfterMs: next.retryAfterMs }, 1);
}

/** Gives each item's cost back and reports the key afterwards, as peek does. */
export function refundAll(items: readonly KeyedItem[], nowMs: number, table: StateTable): RateLimitDecision[] {
  return items.map(({ policy, key, cost }) => {
    const state = ALGORITHM_STEPS[policy.algorithm].refund(table.get(key, policy.algorithm), policy, nowMs, cost);
    const decision = peekState(policy, state, nowMs);
    table.set(key, policy.algorithm, state, decision.resetMs);
    return decision;
  });
}
