import type { RateLimitDecision } from '../policy/policy.types.js';
import { mostRestrictive, retryAfterSeconds } from './rate-limit-headers.js';

/** A request refused by its limits: the denied decisions of its enforced policies (at least one). */
export interface Denied {
  readonly denials: readonly RateLimitDecision[];
}

/** A request refused because a fail-closed policy could not be decided: its store (or its key function) failed. */
export interface Unavailable {
  readonly unavailable: string;
  /** The wait the engine set for the outage (lib/engine/decision-engine.ts, unavailable()): its `timeoutMs`. */
  readonly retryAfterMs: number;
}

/** The wait a refused request is told, and what it was chosen from. */
export interface ChosenWait<D extends RateLimitDecision | undefined = RateLimitDecision | undefined> {
  /** The policy the refusal names (`policy` of the 429 or 503 body). */
  readonly policy: string;
  /** The denial that won: its policy, message and limit answer the client; undefined for an outage. */
  readonly decision: D;
  /** The wait chosen, in ms, before rounding. */
  readonly retryAfterMs: number;
  /** `Retry-After` and `retryAfter` (bodies, GraphQL, WebSocket and RPC errors): whole seconds; null for none. */
  readonly retryAfter: D extends RateLimitDecision ? number | null : number;
}

/**
 * The one place where the wait a refused request is told is chosen: "why 429 with Retry-After 5?" starts
 * here. Every refusal the module answers goes through it (the request path's conclusion and its outages,
 * lib/limiter/conclusion.ts and step-evaluation.ts; RateLimitExceededException, which RateLimitService's
 * acquire() and your own code throw). The inputs, in the order they were made:
 *
 * 1. **Each policy's step** (lib/algorithms/<name>/<name>.ts, its Lua and SQL twins beside it) sets
 *    `retryAfterMs`: when the cost fits again (a window's end, tokens refilled, the oldest entry of the log
 *    gone), Infinity when it never can (`NEVER_FITS`, -1, in Lua and SQL replies).
 * 2. **The store** builds the decision from the step (lib/stores/decisions.ts: `toDecision`, and
 *    `decisionsFromReply` for the Redis and PostgreSQL replies: -1 becomes Infinity, an allowed lease's take
 *    0). A **block** (the policy's `block`, or RateLimitService.block) replaces it
 *    (lib/stores/blocked-state.ts): a denial that starts a block waits `max(step's wait, blockMs)`, a key
 *    under a block waits until the block ends.
 * 3. **The engine** (lib/engine/decision-engine.ts, `decided`) cuts the wait of a **concurrency** denial to
 *    CONCURRENCY_RETRY_MS, 1 s (lib/engine/slot-wait.ts: a slot frees when any request ends), for the
 *    shared store's and the local store's decisions alike (not a block's, not Infinity).
 * 4. Where the decision came from (`source` of onDecision's event) changes no rule, only the clock:
 *    - 'store': as above;
 *    - 'deny-cache': the store's denial remembered (lib/engine/coherence/deny-cache.ts), its wait counting
 *      down to the same instant (`untilMs - now`);
 *    - 'lease': units taken ahead are spent only when they fit: a lease never denies, so never waits;
 *    - 'local' (`failMode: 'local'`, store down): steps 1–3 on the in-process store with the local limit
 *      (lib/engine/local-fallback.ts);
 *    - 'fail-open': nothing refused; 'fail-closed': no decision, see `Unavailable` below.
 * 4b. A **refund** by compensation (another part of the request denied) turns the decision into an allowed
 *    one, wait 0 (lib/engine/compensation.ts): it is never the one chosen.
 * 5. **Here**, of a request's denials (shadow policies left out, lib/limiter/conclusion.ts): the one with
 *    the longest wait wins (`mostRestrictive`, lib/responses/rate-limit-headers.ts; the first of equals,
 *    in the route's order); its policy and message answer the client.
 *    For an **outage** (`Unavailable`) the wait is the engine's `timeoutMs` (StoreUnavailable, thrown by
 *    lib/engine/decision-engine.ts `unavailable()`), and the 503 names the fail-closed policy.
 * 6. **Rounding** (`retryAfterSeconds`): whole seconds, rounded up, at least 1 (a client told 0 retries at
 *    once), null for Infinity: a denial then has no Retry-After (retrying cannot help); an outage always has
 *    one (1 s when its timeout is Infinity).
 *
 * After this, only two things can say more: a GraphQL response shared by several resolvers keeps the longest
 * Retry-After written to it (lib/contexts/graphql-response-fields.ts, `headerValue`); and
 * RateLimitService.acquire() (lib/service/acquire-queue.ts) refuses a waiter behind a sleeping head with the
 * time until the head wakes (its own `retryAfterMs`, then through here). The `t` of the RateLimit header and
 * X-RateLimit-Reset are each policy's own wait, not the chosen one (rateLimitHeaders).
 * @example chosenWait({ denials: [decision] }).retryAfter // 5 for a decision with retryAfterMs 4_200
 */
export function chosenWait(refusal: Denied): ChosenWait<RateLimitDecision>;
export function chosenWait(refusal: Unavailable): ChosenWait<undefined>;
export function chosenWait(refusal: Denied | Unavailable): ChosenWait {
  if ('unavailable' in refusal) {
    const { unavailable: policy, retryAfterMs } = refusal;
    return { policy, decision: undefined, retryAfterMs, retryAfter: retryAfterSeconds(retryAfterMs) ?? 1 };
  }
  const decision = mostRestrictive(refusal.denials);
  const { policy, retryAfterMs } = decision;
  return { policy, decision, retryAfterMs, retryAfter: retryAfterSeconds(retryAfterMs) };
}
