import type { RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';

interface Denial {
  /** The limits the store denied under: a request under higher ones (a plan upgrade) asks the store again. */
  readonly limit: number;
  readonly capacity: number;
  readonly atMs: number;
  readonly untilMs: number;
  readonly cost: number;
  readonly decision: RateLimitDecision;
  /** The other policies of the denied request, as the store reported them, by `<policy id>\n<key>`. */
  readonly others: ReadonlyMap<string, RateLimitDecision> | undefined;
}

/**
 * Denials the store has given, kept until the time they end. A request of at least the same cost on the same
 * policy and key, under limits no higher, before then is denied locally, without a round trip: the store already said no, and it can
 * only say no again (a denial consumes nothing), so the cache never admits anything the store would not.
 * Under a single-key flood the store sees about one call per key per retry-after, not one per request.
 * Bounded: beyond `maxKeys` the oldest denial is dropped, which only costs a round trip.
 */
export class DenyCache {
  private readonly denials = new Map<string, Denial>();

  constructor(private readonly maxKeys = 10_000) {}

  get size(): number {
    return this.denials.size;
  }

  /** A local denial of `cost` units of `policy` for `key` at `nowMs`, or undefined: ask the store. */
  check(policy: ResolvedPolicy, key: string, cost: number, nowMs: number): RateLimitDecision | undefined {
    if (this.denials.size === 0) return undefined;
    const id = `${policy.id}\n${key}`;
    const denial = this.denials.get(id);
    if (denial === undefined) return undefined;
    if (denial.untilMs <= nowMs) {
      this.denials.delete(id);
      return undefined;
    }
    if (cost < denial.cost || policy.limit > denial.limit || policy.capacity > denial.capacity) return undefined;
    const elapsedMs = nowMs - denial.atMs;
    return {
      ...denial.decision,
      retryAfterMs: denial.untilMs - nowMs,
      resetMs: Math.max(denial.untilMs - nowMs, denial.decision.resetMs - elapsedMs),
    };
  }

  /**
   * How the other policies of a request stood when the store gave the denial that check() answered with
   * (their resets counted down since), so that a local 429 shows the same policies as the store's did.
   */
  others(policy: ResolvedPolicy, key: string, nowMs: number): ReadonlyMap<string, RateLimitDecision> | undefined {
    const denial = this.denials.get(`${policy.id}\n${key}`);
    if (denial?.others === undefined) return undefined;
    const elapsedMs = nowMs - denial.atMs;
    const out = new Map<string, RateLimitDecision>();
    for (const [id, d] of denial.others) out.set(id, { ...d, resetMs: Math.max(0, d.resetMs - elapsedMs) });
    return out;
  }

  /** Remembers a denial the store gave at `nowMs`, with the request's other decisions (`others`). */
  remember(
    policy: ResolvedPolicy,
    key: string,
    cost: number,
    decision: RateLimitDecision,
    nowMs: number,
    others?: ReadonlyMap<string, RateLimitDecision>,
  ): void {
    if (decision.allowed || !Number.isFinite(decision.retryAfterMs) || decision.retryAfterMs <= 0) return;
    const id = `${policy.id}\n${key}`;
    this.denials.delete(id);
    const { limit, capacity } = policy;
    const untilMs = nowMs + decision.retryAfterMs;
    this.denials.set(id, { limit, capacity, atMs: nowMs, untilMs, cost, decision, others });
    if (this.denials.size > this.maxKeys) {
      const oldest = this.denials.keys().next();
      if (oldest.done !== true) this.denials.delete(oldest.value);
    }
  }

  /** Forgets a key's denial (after a refund or reset in this process). */
  forget(policy: ResolvedPolicy, key: string): void {
    if (this.denials.size > 0) this.denials.delete(`${policy.id}\n${key}`);
  }
}
