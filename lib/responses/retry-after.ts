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
 * here. Every refusal the module answers goes through it: the request path's denials and outages
 * (lib/limiter/conclusion.ts, lib/limiter/step-evaluation.ts) and RateLimitExceededException (thrown by
 * RateLimitService.acquire() and by your own code). Its inputs, in the order they were made:
 *
 * 1. **The algorithm's step** (lib/algorithms/<name>/<name>.ts) sets each policy's `retryAfterMs`: when the
 *    cost fits again (the window's end, the tokens refilled, the log's oldest entry gone), Infinity when it
 *    never can (-1, `NEVER_FITS`, in Lua and SQL). Its twins beside it decide alike (lib/algorithms/twins.ts
 *    names them): the SQL (<name>.sql.ts) on PostgreSQL, and on Redis the Lua file <name>.lua, by either of
 *    the program's paths: lean.lua's for a request without a block, lease or shadow item (a fixed window by
 *    period-counter.lua's period_decide, a GCRA by gcra.lua's gcra_decide, the others by the twin's step),
 *    the twins' path (lib/stores/redis/lua/dispatcher.lua, requests.lua) for the rest.
 * 2. **The store** makes the decision of the step (lib/stores/decisions.ts: `toDecision`, and
 *    `decisionsFromReply` for a Redis or PostgreSQL reply: -1 back to Infinity, an allowed lease's take to
 *    0), its wait and reset bounded by the policy's longest wait (lib/policy/max-wait.ts, `maxWaitMs`: a
 *    clock ahead or state of another shape never asks for more; the engine reports one beyond the skew
 *    allowed, lib/engine/overlong-waits.ts). The other items of a denied request are answered allowed, wait 0
 *    (they consumed nothing).
 * 3. **A block** (the policy's `block`, or RateLimitService.block) replaces that wait, in the store
 *    (lib/stores/blocked-state.ts; twins: `blocking`/`blocked` in lib/stores/redis/lua/dispatcher.lua,
 *    `blockingReply`/`blockedReply` in lib/stores/postgres/reply.sql.ts): the denial that starts a block
 *    waits the longer of its step's wait and the block (Infinity stays); a key under a block waits until the
 *    block ends.
 * 4. **The engine** cuts the wait of a concurrency denial to CONCURRENCY_RETRY_MS, 1 s, since a slot frees
 *    when any running request ends (lib/engine/slot-wait.ts; applied once, to what the shared or the local
 *    store decided, in DecisionEngine's `decided`, and to peeks, in ServiceCalls' `peek`). Not a block's wait,
 *    not Infinity.
 * 5. **Where the decision came from** (`source` in onDecision's event) adds no rule of its own:
 *    - 'store': steps 1 to 4 as they are;
 *    - 'deny-cache': a denial of the store, remembered (lib/engine/coherence/deny-cache.ts, `check`) for at
 *      most `denyCacheMs`: its wait counts down to the same instant (`untilMs - now`); concurrency and quota
 *      denials are not cached;
 *    - 'lease': units taken ahead are spent only when they fit (lib/engine/leases/lease-book.ts, `spend`):
 *      always allowed, wait 0, so never the one chosen;
 *    - 'local' (`failMode: 'local'` while the store fails): steps 1 to 4 on the in-process store, on the
 *      local limit (lib/engine/local-fallback.ts);
 *    - 'fail-open': nothing refused, nothing to wait for; 'fail-closed': no decision, an outage (below).
 *    A decision given back by compensation (a later part of the request denied) becomes allowed, wait 0
 *    (lib/engine/compensation.ts).
 * 6. **Here, which denial wins**: of the request's denials (shadow policies left out, in the route's order:
 *    lib/limiter/conclusion.ts), the one with the longest wait, the first of equals (`mostRestrictive`,
 *    lib/responses/rate-limit-headers.ts); its policy and message answer the client. An **outage**
 *    (`Unavailable`: a fail-closed policy's store, key, cost or list function failed) waits the module's
 *    `timeout` (lib/engine/decision-engine.ts, `unavailable`) and names the fail-closed policy.
 * 7. **Here, rounding** (`retryAfterSeconds`): whole seconds, rounded up, at least 1 (a client told 0 would
 *    retry at once). Infinity gives null: a denial then has no Retry-After, retrying cannot help; an outage
 *    always has one (1 s when its timeout is Infinity).
 *
 * Besides, three things change what a client is told, each where it happens: a GraphQL response that several
 * resolvers share keeps the longest Retry-After written to it (lib/contexts/graphql-response-fields.ts,
 * `headerValue`); RateLimitService.acquire() refuses a waiter queued behind a sleeping one with the time until
 * that one wakes, then through here (lib/service/acquire-queue.ts, `refuseIfHopeless`), and its shutdown
 * answers 503 with 1 s (`shutDown`).
 * The RateLimit header's `t` and X-RateLimit-Reset give each policy's own wait, rounded up but not chosen
 * (`rateLimitHeaders`).
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
