import { CONCURRENCY_RETRY_MS } from '../algorithms/concurrency/concurrency.js';
import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

/**
 * Applied once, where the engine answers a consume of the shared or the local store (DecisionEngine's
 * `decided`) and a peek (ServiceCalls' `peek`), so that every store, the bundled ones and yours, agrees.
 * The decisions of `items` (`decisions[i]` is that of `items[i]`) with the wait of each concurrency denial
 * cut to at most CONCURRENCY_RETRY_MS: the store says when the oldest slot expires, but a slot frees when
 * any running request ends. Left as they are: a block (its wait is the point of it) and a cost that can never
 * fit (Infinity: no retry helps). Returns `decisions` itself when nothing changes; never mutates a decision,
 * since a store may keep the objects it returns.
 */
export function withConcurrencyWaits(
  items: readonly { readonly policy: ResolvedPolicy }[],
  decisions: RateLimitDecision[],
): RateLimitDecision[] {
  let out: RateLimitDecision[] | undefined;
  decisions.forEach((decision, i) => {
    if (items[i]?.policy.algorithm !== 'concurrency' || !needsCap(decision)) return;
    out ??= [...decisions];
    out[i] = { ...decision, retryAfterMs: CONCURRENCY_RETRY_MS };
  });
  return out ?? decisions;
}

const needsCap = (decision: RateLimitDecision): boolean =>
  !decision.allowed &&
  decision.blocked !== true &&
  Number.isFinite(decision.retryAfterMs) &&
  decision.retryAfterMs > CONCURRENCY_RETRY_MS;
