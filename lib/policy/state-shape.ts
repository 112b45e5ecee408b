import type { QuotaPeriod, RateLimitAlgorithm } from './policy.types.js';

/**
 * Separates a policy's id from the tag of its state's shape where a key shows the shape (readableKeys:
 * `rl:{per-user|fw1m:user:42}`). Policy names never hold it (validate-policy.ts: letters, digits, `_.-`).
 */
export const SHAPE_SEPARATOR = '|';

/**
 * Short names of the algorithms in shape tags: an operator reads them in the keyspace. A token bucket and a GCRA
 * share one, `b` (bucket): they decide alike on one state, the TAT, and each reads the other's exactly
 * (test/redis/gcra-state.spec.ts), so a policy switched between them keeps its state.
 */
const CODES: Readonly<Record<RateLimitAlgorithm, string>> = {
  'fixed-window': 'fw',
  'sliding-window-log': 'swl',
  'sliding-window-counter': 'swc',
  'token-bucket': 'b',
  gcra: 'b',
  concurrency: 'cc',
  quota: 'q',
};

const UNITS: readonly (readonly [string, number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
];

/** A window as the shortest duration string that is exact: 60000 → '1m', 1500 → '1500ms'. */
function compactDuration(ms: number): string {
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** What a shape is made of: the fields that change what a stored value means. */
export interface StateShape {
  readonly algorithm: RateLimitAlgorithm;
  readonly windowMs: number;
  readonly anchor?: 'first-request';
  readonly quota?: { readonly period: QuotaPeriod; readonly timeZone: string };
}

/**
 * The tag of the shape of a policy's stored state: its algorithm and what gives its stored values their meaning
 * (a window index under its window length, a bucket's units of 1/window, a quota's calendar): `fw1m`, `fwf10s`
 * (a fixed window from the first request), `b1s` (a token bucket or GCRA), `qd` (a quota per UTC day), `qm-Europe/Paris`. The
 * stores key a policy's state by its shape as well as its id (storage-key.ts: the identity's keyed hash covers
 * it), so a policy whose shape changes under the same name (a deploy) reads none of the old state. The
 * limit and the burst are not in it: a count, a bucket's units and a TAT mean the same under another limit (a
 * TAT beyond the new burst is bounded where it is read: max-wait.ts).
 * @example shapeTag({ algorithm: 'fixed-window', windowMs: 60_000 }) // 'fw1m'
 */
export function shapeTag(shape: StateShape): string {
  const code = CODES[shape.algorithm];
  if (shape.quota !== undefined) {
    const { period, timeZone } = shape.quota;
    return `${code}${period === 'day' ? 'd' : 'm'}${timeZone === 'UTC' ? '' : `-${timeZone}`}`;
  }
  return `${code}${shape.anchor === 'first-request' ? 'f' : ''}${compactDuration(shape.windowMs)}`;
}
