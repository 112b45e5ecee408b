/**
 * A store replied with something that is not a reply to what it was asked (a decision missing, or of another
 * shape): a defect of the store, its client or the module, never an outage.
 */
export class RateLimitStoreReplyError extends TypeError {
  override readonly name = 'RateLimitStoreReplyError';
}

/**
 * Whether a store call failed with a programming error (a TypeError such as a client whose commands have other
 * names, a reply of the wrong shape, a missing element) rather than a connection error or a timeout. Such a
 * failure is a defect to report loudly, not an outage for the breaker and the fail modes to absorb: absorbed,
 * it would switch every fail-open limit off for as long as the defect lasts, which is for ever.
 */
export const isDefect = (error: unknown): boolean =>
  error instanceof TypeError ||
  error instanceof RangeError ||
  error instanceof ReferenceError ||
  error instanceof SyntaxError;

/** A store's decisions, checked: one per item asked about, each with a boolean `allowed`; else a defect. */
export function checkedDecisions<T extends { allowed: boolean }>(reply: unknown, count: number, what: string): T[] {
  const fine =
    Array.isArray(reply) &&
    reply.length === count &&
    reply.every((d) => typeof d === 'object' && d !== null && typeof (d as T).allowed === 'boolean');
  if (!fine) {
    const got = Array.isArray(reply)
      ? `${reply.length} element(s): ${JSON.stringify(reply).slice(0, 200)}`
      : String(reply);
    throw new RateLimitStoreReplyError(`nest-rate-limit: ${what} should hold ${count} decision(s), got ${got}`);
  }
  return reply as T[];
}
