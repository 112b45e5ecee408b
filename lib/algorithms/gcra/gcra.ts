import { type Algorithm, type StepResult } from '../algorithm.js';
import { emissionUs, MAX_LEAD_US } from '../../policy/emission.js';
import { DEBT_CAP_CAPACITIES } from '../../policy/max-wait.js';
import { ceilDiv } from '../../util/integer-math.js';
import type { ResolvedPolicy } from '../../policy/policy.types.js';

/**
 * GCRA's state: the theoretical arrival time (TAT) in microseconds since the epoch, and for a policy whose limit
 * is a function of the request (a per-plan limit) the limit it was written with. A TAT at or before now is no
 * state at all.
 */
export interface GcraState {
  readonly tatUs: number;
  readonly limit?: number;
}

/**
 * ceil(a × b / c) for integers a, b >= 0 and c >= 1 below 2^53, exactly (the product may exceed 2^53), as the
 * Lua twin's mul_div_ceil and the SQL twin's numeric arithmetic compute it.
 */
export function mulDivCeil(a: number, b: number, c: number): number {
  const p = BigInt(a) * BigInt(b);
  const d = BigInt(c);
  const q = p / d;
  return Number(q * d < p ? q + 1n : q);
}

/**
 * How the state stands at now: the lead of its TAT over now in µs (0 when it is behind: a clock behind the
 * TAT keeps it), and the emission interval of the limit it was written with (the policy's own for a state
 * without one).
 */
function standing(state: GcraState | undefined, nowUs: number, limit: number, windowMs: number, t: number) {
  if (state === undefined) return { lead: 0, tWritten: t };
  const written = state.limit ?? limit;
  return {
    lead: Math.max(0, state.tatUs - nowUs),
    tWritten: written === limit ? t : emissionUs(written, windowMs),
  };
}

/**
 * The lead in this limit's time: a state written with another limit (a plan changed) keeps what it took, its
 * lead scaled by T / T_written and rounded up (never gives a unit back).
 */
const converted = (lead: number, t: number, tWritten: number): number =>
  t === tWritten ? lead : mulDivCeil(lead, t, tWritten);

/**
 * A new state: with its limit for a per-plan policy, and for a key that had one still counting (a static
 * policy of the same name, as RateLimitService calls with a numeric limit, keeps a per-plan key's lead
 * convertible; a lapsed state is no state, as a store that expired it holds none).
 */
const written = (tatUs: number, limit: number, withLimit: boolean): GcraState =>
  withLimit ? { tatUs, limit } : { tatUs };

/**
 * GCRA, as in the design notes: one value per key, the TAT. Emission interval T (emissionUs), burst B =
 * policy.capacity; a request of cost c moves the TAT to `max(TAT, now) + c·T` and is allowed when that is at
 * most `B·T` ahead of now. A state written with another limit (per-plan policies) is read with its lead
 * converted; its units keep draining at the limit they were written with until the next write, so a denial's
 * retryAfterMs is `ceil((lead − (B − c)·T_written) / 1000)`, exact in both cases. A refund of a units moves the
 * TAT back by a·T_written, and keeps the limit the state was written with. `perPlan`: whether the written
 * state carries its limit (policies whose limit is a function of the request; a state that had one keeps it).
 */
export function makeGcra(perPlan: boolean): Algorithm<GcraState> {
  return {
    step(state, policy, nowMs, cost): StepResult<GcraState> {
      const { t, burst } = shape(policy);
      const nowUs = nowMs * 1000;
      const { lead, tWritten } = standing(state, nowUs, policy.limit, policy.windowMs, t);
      const remaining = Math.max(0, burst - ceilDiv(lead, tWritten));
      const resetMs = ceilDiv(lead, 1000);
      if (cost > burst) return { state, allowed: false, remaining, resetMs, retryAfterMs: Infinity };
      const room = (burst - cost) * tWritten;
      if (lead > room) {
        return { state, allowed: false, remaining, resetMs, retryAfterMs: ceilDiv(lead - room, 1000) };
      }
      if (cost === 0) return { state, allowed: true, remaining, resetMs, retryAfterMs: 0 };
      const next = converted(lead, t, tWritten) + cost * t;
      return {
        // a lapsed state (lead 0) counts nothing: whether a store still holds it must not change what is written
        state: written(nowUs + next, policy.limit, perPlan || (lead > 0 && state?.limit !== undefined)),
        allowed: true,
        remaining: burst - ceilDiv(next, t),
        resetMs: ceilDiv(next, 1000),
        retryAfterMs: 0,
      };
    },

    refund(state, policy, nowMs, amount) {
      if (state === undefined) return undefined;
      const nowUs = nowMs * 1000;
      const t = emissionUs(policy.limit, policy.windowMs);
      const { lead, tWritten } = standing(state, nowUs, policy.limit, policy.windowMs, t);
      // in the time of the limit it was written with: no conversion, no rounding
      const back = amount * tWritten;
      if (back >= lead) return undefined;
      return written(nowUs + lead - back, state.limit ?? policy.limit, perPlan || state.limit !== undefined);
    },

    /**
     * Moves the TAT ahead by amount × T even past the burst (a debt): steps are denied until it is at most
     * (burst − cost) × T ahead. A key still counting is charged in the time of the limit it was written with,
     * which it keeps (as refund gives back); a lapsed one at the policy's. The lead is clamped at the debt cap,
     * a burst owed beyond the burst (maxLeadUs), within MAX_LEAD_US, the bound that keeps every sum of the step
     * below 2^53 (a lead already beyond, from a clock ahead or a burst lowered since, stays).
     */
    charge(state, policy, nowMs, amount) {
      const nowUs = nowMs * 1000;
      const { t, burst } = shape(policy);
      const { lead, tWritten } = standing(state, nowUs, policy.limit, policy.windowMs, t);
      const counting = lead > 0;
      const tw = counting ? tWritten : t;
      const most = Math.max(lead, maxLeadUs(burst, t));
      const next = amount > Math.floor((most - lead) / tw) ? most : lead + amount * tw;
      const limit = counting ? (state?.limit ?? policy.limit) : policy.limit;
      return written(nowUs + next, limit, perPlan || (counting && state?.limit !== undefined));
    },
  };
}

/**
 * The policy's emission interval in µs and its burst, bounded so that B·T <= MAX_LEAD_US (validation makes
 * that hold for static policies; a per-request limit and burst are checked one by one, and an extreme pair
 * gets the largest burst that fits).
 */
function shape(policy: ResolvedPolicy): { t: number; burst: number } {
  const t = emissionUs(policy.limit, policy.windowMs);
  return { t, burst: Math.min(policy.capacity, Math.floor(MAX_LEAD_US / t)) };
}

/**
 * The furthest ahead of now a charge leaves a TAT, in µs: the burst, and DEBT_CAP_CAPACITIES bursts owed beyond
 * it (so no wait is longer than maxWaitMs), within MAX_LEAD_US.
 */
export const maxLeadUs = (burst: number, t: number): number =>
  Math.min(MAX_LEAD_US, (1 + DEBT_CAP_CAPACITIES) * burst * t);

/** GCRA for policies with a static limit: the state is the TAT alone. */
export const gcra: Algorithm<GcraState> = makeGcra(false);

/** GCRA for policies whose limit is a function of the request: the state is the TAT and its limit. */
export const gcraPerPlan: Algorithm<GcraState> = makeGcra(true);

/**
 * The longest a GCRA key (the TAT alone) outlives its TAT in Redis: every write sets its expiry to the end of the
 * TAT's epoch, of this many ms or the policy's window if shorter (and the slack), so that a consume whose TAT
 * stays within its epoch needs only INCRBY (gcra.lua's gcra_write), no PEXPIRE. With the window's bound, a key of
 * a policy whose capacity is its limit is gone two windows after its last write, as a sliding window counter's.
 */
export const GCRA_EXPIRY_EPOCH_MS = 10_000;
