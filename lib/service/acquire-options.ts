/** The options of `acquire()` other than `cost`, checked. */
export interface AcquireOptions {
  readonly maxWaitMs: number;
  readonly signal: AbortSignal | undefined;
  readonly fairKey: string | undefined;
  readonly weight: number | undefined;
}

/**
 * Checks the options of `acquire()` other than `cost`, reporting a problem through `fail(field, problem)`.
 * `maxWaitMs` is required: a whole number of milliseconds >= 0; `fairKey` a non-empty string; `weight` a finite
 * number > 0 (it needs a `fairKey`: alone it would weigh nothing against anyone).
 */
export function checkAcquireOptions(opts: unknown, fail: (field: string, problem: string) => never): AcquireOptions {
  if (opts === null || typeof opts !== 'object') {
    return fail(
      'maxWaitMs',
      `acquire() needs options { maxWaitMs, cost?, signal?, fairKey?, weight? }, got ${show(opts)}`,
    );
  }
  const { maxWaitMs, signal, fairKey, weight } = opts as Record<string, unknown>;
  if (typeof maxWaitMs !== 'number' || !Number.isSafeInteger(maxWaitMs) || maxWaitMs < 0) {
    return fail('maxWaitMs', `must be a whole number of milliseconds >= 0 (0 tries once), got ${show(maxWaitMs)}`);
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    return fail('signal', `must be an AbortSignal, got ${show(signal)}`);
  }
  if (fairKey !== undefined && (typeof fairKey !== 'string' || fairKey === '')) {
    return fail('fairKey', `must be a non-empty string (whose turn the waiter takes), got ${show(fairKey)}`);
  }
  if (weight !== undefined) {
    if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) {
      return fail('weight', `must be a finite number > 0, got ${show(weight)}`);
    }
    if (fairKey === undefined) return fail('weight', 'needs a fairKey: it weighs one fair key against the others');
  }
  return { maxWaitMs, signal, fairKey, weight };
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  return value !== null && typeof value === 'object' ? 'an object' : String(value);
}

function isAbortSignal(value: unknown): value is AbortSignal {
  if (value === null || typeof value !== 'object') return false;
  const signal = value as Partial<AbortSignal>;
  return typeof signal.aborted === 'boolean' && typeof signal.addEventListener === 'function';
}
