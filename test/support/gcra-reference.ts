/**
 * GCRA written from its definition (the virtual scheduling algorithm of ITU-T I.371, with costs), in BigInt µs,
 * independently of lib's step: no import from lib/algorithms. Only the predicate "is a request of cost c at
 * time t allowed" comes from the definition; what a decision reports (remaining, resetMs, retryAfterMs) is found
 * by searching that predicate, not by a formula.
 *
 * Definition: emission interval T = ceil(1000 × windowMs / limit) µs (rounded up: never faster than the
 * limit), burst B. The state is the theoretical arrival time TAT (µs) and, for a per-plan limit, the limit it
 * was written with. At t, a request of cost c is allowed iff c <= B and max(TAT, t) + c·T − t <= B·T; then TAT
 * becomes max(TAT, t) + c·T. A TAT written with another limit L' (interval T') is first read with its lead
 * over t converted so that what was taken stays taken: lead = ceil((TAT − t) × T / T'). A refund of a units
 * moves the TAT back by a·T' and keeps L' (no rounding); a TAT at or before t is no state.
 */
export interface ReferencePolicy {
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
}

export interface ReferenceState {
  readonly tatUs: bigint;
  readonly limit: number;
}

export interface ReferenceDecision {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
}

const interval = (p: { limit: number; windowMs: number }): bigint => {
  const total = 1000n * BigInt(p.windowMs);
  const l = BigInt(p.limit);
  return (total + l - 1n) / l;
};

const ceilOf = (a: bigint, b: bigint): bigint => (a <= 0n ? 0n : (a + b - 1n) / b);

export class GcraReference {
  /** The lead (µs) of the state over `tUs` in the policy's own interval: 0 without state or when behind. */
  lead(state: ReferenceState | undefined, policy: ReferencePolicy, tUs: bigint): bigint {
    if (state === undefined || state.tatUs <= tUs) return 0n;
    const ahead = state.tatUs - tUs;
    if (state.limit === policy.limit) return ahead;
    const t = interval(policy);
    const tWritten = interval({ limit: state.limit, windowMs: policy.windowMs });
    return ceilOf(ahead * t, tWritten);
  }

  allowed(state: ReferenceState | undefined, policy: ReferencePolicy, nowMs: number, cost: number): boolean {
    if (cost > policy.burst) return false;
    const t = interval(policy);
    return this.lead(state, policy, BigInt(nowMs) * 1000n) + BigInt(cost) * t <= BigInt(policy.burst) * t;
  }

  /** The state after an allowed request (unchanged for a cost of 0). */
  after(state: ReferenceState | undefined, policy: ReferencePolicy, nowMs: number, cost: number) {
    if (cost === 0) return state;
    const now = BigInt(nowMs) * 1000n;
    return { tatUs: now + this.lead(state, policy, now) + BigInt(cost) * interval(policy), limit: policy.limit };
  }

  /** A refund of a units moves the TAT back by a intervals of the limit it was written with, which it keeps. */
  refund(state: ReferenceState | undefined, policy: ReferencePolicy, nowMs: number, amount: number) {
    const now = BigInt(nowMs) * 1000n;
    if (state === undefined || state.tatUs <= now) return undefined;
    const tat = state.tatUs - BigInt(amount) * interval({ limit: state.limit, windowMs: policy.windowMs });
    return tat > now ? { tatUs: tat, limit: state.limit } : undefined;
  }

  /**
   * The decision, and the state afterwards. remaining: the largest k <= B that would be allowed now (after the
   * request when it is allowed); resetMs: the least wait after which the state is gone; retryAfterMs: the least
   * wait after which the same request is allowed (Infinity when c > B), all found by search.
   */
  decide(
    state: ReferenceState | undefined,
    policy: ReferencePolicy,
    nowMs: number,
    cost: number,
  ): { decision: ReferenceDecision; state: ReferenceState | undefined } {
    const allowed = this.allowed(state, policy, nowMs, cost);
    const next = allowed ? this.after(state, policy, nowMs, cost) : state;
    const remaining = largest(0, policy.burst, (k) => this.allowed(next, policy, nowMs, k)) ?? 0;
    const resetMs = least(0, (d) => next === undefined || next.tatUs <= BigInt(nowMs + d) * 1000n);
    const retryAfterMs = allowed
      ? 0
      : cost > policy.burst
        ? Infinity
        : least(1, (d) => this.allowed(state, policy, nowMs + d, cost));
    return { decision: { allowed, remaining, resetMs, retryAfterMs }, state: next };
  }
}

/** The largest n in [lo, hi] with ok(n), for ok true up to some n and false after; undefined if none. */
function largest(lo: number, hi: number, ok: (n: number) => boolean): number | undefined {
  if (!ok(lo)) return undefined;
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2);
    if (ok(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The least n >= from with ok(n), for ok false up to some n and true after. */
function least(from: number, ok: (n: number) => boolean): number {
  let hi = from;
  let step = 1;
  while (!ok(hi)) {
    hi += step;
    step *= 2;
  }
  let lo = from;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (ok(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
