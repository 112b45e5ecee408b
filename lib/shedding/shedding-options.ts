import { parseWindow } from '../policy/window.js';
import { checkOptionFields, fieldNames } from '../util/unknown-fields.js';

/**
 * The module's `shedding` option: an adaptive concurrency limit for the handlers the module guards, learned from
 * their latency (Gradient2), and the event loop's delay watched. Off unless given; `true` takes every default.
 * @example RateLimitModule.forRoot({ shedding: { minLimit: 8, maxLimit: 500, reserve: 0.25 } })
 */
export interface RateLimitSheddingOptions {
  /** The least the limit falls to, in requests in flight (an integer >= 1). Default 4. */
  minLimit?: number;
  /**
   * The most it grows to (an integer >= minLimit). Default 200 (Netflix's): under an overload that lasts, the
   * long-term latency creeps up and the limit with it; the maximum is the backstop.
   */
  maxLimit?: number;
  /** Where it starts (clamped to the bounds). Default 20. */
  initialLimit?: number;
  /**
   * The share of the limit only `critical` requests may use (0–1): `default` ones are admitted up to
   * `limit × (1 − reserve)` in flight, `sheddable` ones up to `limit × (1 − reserve)²`. Default 0.2.
   */
  reserve?: number;
  /**
   * The event-loop delay that counts as overload (ms, or a duration such as `'200ms'`): while the loop lags
   * more, sheddable requests are refused and the limit falls by a tenth every 100 ms. 0 turns the watch off.
   * Default 100 ms.
   */
  maxEventLoopDelay?: number | string;
}

/** The `shedding` option, checked, with its defaults. */
export interface SheddingSettings {
  readonly minLimit: number;
  readonly maxLimit: number;
  readonly initialLimit: number;
  readonly reserve: number;
  /** 0: not watched. */
  readonly maxEventLoopDelayMs: number;
}

export const SHEDDING_DEFAULTS: SheddingSettings = {
  minLimit: 4,
  maxLimit: 200,
  initialLimit: 20,
  reserve: 0.2,
  maxEventLoopDelayMs: 100,
};

const SHEDDING_FIELDS = fieldNames<RateLimitSheddingOptions>({
  minLimit: true,
  maxLimit: true,
  initialLimit: true,
  reserve: true,
  maxEventLoopDelay: true,
});

const bad = (field: string, problem: string, value: unknown): never => {
  throw new TypeError(`nest-rate-limit: option "shedding.${field}" ${problem}, got ${JSON.stringify(value)}`);
};

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 1;

/** The `shedding` option checked (undefined or false: off); a bad value stops the start, naming the field. */
export function sheddingSettings(option: RateLimitSheddingOptions | boolean | undefined): SheddingSettings | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return SHEDDING_DEFAULTS;
  if (typeof option !== 'object' || option === null) {
    throw new TypeError(
      `nest-rate-limit: option "shedding" must be true or an object of its fields, got ${JSON.stringify(option)}`,
    );
  }
  checkOptionFields(option, SHEDDING_FIELDS, 'shedding');
  const { minLimit = SHEDDING_DEFAULTS.minLimit, maxLimit = SHEDDING_DEFAULTS.maxLimit } = option;
  if (!isCount(minLimit)) bad('minLimit', 'must be an integer >= 1 (requests in flight)', minLimit);
  if (!isCount(maxLimit)) bad('maxLimit', 'must be an integer >= 1 (requests in flight)', maxLimit);
  if (minLimit > maxLimit) bad('minLimit', `must not be above shedding.maxLimit (${maxLimit})`, minLimit);
  // Clamped to the bounds by the limit itself (Gradient2Limit).
  const initialLimit = option.initialLimit ?? SHEDDING_DEFAULTS.initialLimit;
  if (!isCount(initialLimit)) bad('initialLimit', 'must be an integer >= 1 (requests in flight)', initialLimit);
  const reserve = option.reserve ?? SHEDDING_DEFAULTS.reserve;
  if (typeof reserve !== 'number' || !(reserve >= 0 && reserve <= 1)) {
    bad('reserve', 'must be a number from 0 to 1 (the share of the limit kept for critical requests)', reserve);
  }
  const delay = option.maxEventLoopDelay ?? SHEDDING_DEFAULTS.maxEventLoopDelayMs;
  const maxEventLoopDelayMs = delay === 0 ? 0 : parseWindow(delay);
  if (maxEventLoopDelayMs === undefined) {
    bad('maxEventLoopDelay', "must be 0 (off), a number of ms >= 1 or a duration such as '200ms'", delay);
  }
  return { minLimit, maxLimit, initialLimit, reserve, maxEventLoopDelayMs: maxEventLoopDelayMs as number };
}
