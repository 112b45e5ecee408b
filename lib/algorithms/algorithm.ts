import type { ResolvedPolicy } from '../policy/policy.types.js';

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
 * has a Lua twin (`<name>.lua.ts`) with the same meaning for Redis. All arithmetic is on integers below 2^53
 * (validation bounds capacity × windowMs), so both twins compute bit-identical results.
 */
export interface Algorithm<S> {
  step(state: S | undefined, policy: ResolvedPolicy, nowMs: number, cost: number): StepResult<S>;
  /** Gives `amount` units back, never beyond the policy's capacity. */
  refund(state: S | undefined, policy: ResolvedPolicy, nowMs: number, amount: number): S | undefined;
}

/** retryAfterMs Infinity (a cost that can never fit) in the Lua and SQL twins and the stores' replies. */
export const NEVER_FITS = -1;

/**
 * The columns of an SQL twin's decision: StepResult as SQL (new_st NULL for undefined, allowed 0/1, retry_ms -1
 * for Infinity), and how the key stands before the step: the remaining and reset_ms of a cost of 0, which a
 * request denied by another of its items reports for this one.
 */
export const SQL_DECISION =
  'new_st text, allowed int, remaining bigint, reset_ms bigint, retry_ms bigint, remaining_now bigint, reset_now bigint';
