import type { ResolvedPolicy } from '../policy/policy.types.js';
import { MAX_UNITS } from '../policy/value-checks.js';

/**
 * What one step of an algorithm decides. `state` is the key's state afterwards (undefined once nothing is
 * counted any more); a denied step returns the state it was given, unchanged. Times are milliseconds.
 */
export interface StepResult<S> {
  state: S | undefined;
  allowed: boolean;
  remaining: number;
  resetMs: number;
  /** 0 when allowed; Infinity when the cost is larger than the policy's capacity and can never fit. */
  retryAfterMs: number;
}

/**
 * An algorithm as pure functions of (state, policy, now, cost). The memory store runs them as they are; each
 * has a Lua twin (`<name>.lua`) with the same meaning for Redis. All arithmetic is on integers below 2^53
 * (validation bounds capacity × windowMs), so both twins compute bit-identical results.
 */
export interface Algorithm<S> {
  step(state: S | undefined, policy: ResolvedPolicy, nowMs: number, cost: number): StepResult<S>;
  /** Gives `amount` units back, never beyond the policy's capacity. */
  refund(state: S | undefined, policy: ResolvedPolicy, nowMs: number, amount: number): S | undefined;
  /**
   * Takes `amount` (>= 1) units without deciding: counted even past the limit, a debt that later steps wait out
   * as they would wait for units to come back (reserve, then settle: the overrun of a cost known afterwards).
   * Bounded where the count would leave the integers every twin computes exactly: clamped there.
   */
  charge(state: S | undefined, policy: ResolvedPolicy, nowMs: number, amount: number): S | undefined;
}

/**
 * The most units a charge leaves counted for a policy that counts whole units (fixed window, quota, sliding
 * log), or units × windowMs for the sliding window counter's current window: 2^51, as MAX_UNITS, so that a
 * step's sums on top of it stay below 2^53. The token bucket, whose units are scaled by windowMs already, may
 * take up to twice this (2^52); GCRA's lead is bounded by MAX_LEAD_US. A charge beyond is clamped at the bound
 * (about 71 years of a limit of one unit a ms: no limit a key could pay back anyway).
 */
export const MAX_CHARGED_UNITS = MAX_UNITS;

/** retryAfterMs Infinity (a cost that can never fit) in the Lua and SQL twins and the stores' replies. */
export const NEVER_FITS = -1;

/**
 * The columns of an SQL twin's decision: StepResult as SQL (new_st NULL for undefined, allowed 0/1, retry_ms -1
 * for Infinity), and how the key stands before the step: the remaining and reset_ms of a cost of 0, which a
 * request denied by another of its items reports for this one.
 */
export const SQL_DECISION =
  'new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint';
