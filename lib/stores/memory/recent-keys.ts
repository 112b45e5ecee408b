/** Identities a generation holds before the memo starts a new one: at most twice as many are kept. */
export const RECENT_KEYS = 4096;
/** Longest identity remembered: longer ones (rare, or hostile) are keyed every time, so the memo stays small. */
export const RECENT_KEY_MAX_LENGTH = 256;

/**
 * The storage keys of one policy's identities met lately, so that a request of a known identity builds no key
 * (and hashes nothing): two generations of at most RECENT_KEYS each, the older dropped whole when the newer
 * fills, with no per-entry bookkeeping. Held in this process's memory only, as the identities' memo is.
 */
export class RecentKeys {
  private recent = new Map<string, string>();
  private older = new Map<string, string>();

  constructor(private readonly size = RECENT_KEYS) {}

  /** The key remembered for `identity`, moved to the newer generation; undefined when none is. */
  get(identity: string): string | undefined {
    const key = this.recent.get(identity);
    if (key !== undefined) return key;
    const old = this.older.get(identity);
    if (old !== undefined) this.set(identity, old);
    return old;
  }

  /** Remembers the key of `identity` (not for identities longer than RECENT_KEY_MAX_LENGTH). */
  set(identity: string, key: string): void {
    if (identity.length > RECENT_KEY_MAX_LENGTH) return;
    if (this.recent.size >= this.size) {
      this.older = this.recent;
      this.recent = new Map();
    }
    this.recent.set(identity, key);
  }

  /** Identities remembered, both generations (an identity in both counts twice). */
  get held(): number {
    return this.recent.size + this.older.size;
  }
}
