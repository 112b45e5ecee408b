import type { Logger } from '../../util/logger.js';

import type { Clock } from '../../util/clock.js';
import type { CheckedOverrideChange } from '../../policy/override.js';
import type { ResolvedPolicy } from '../../policy/policy.types.js';
import type { OverrideStorage, StoredOverride } from '../../stores/overrides.js';
import { withTimeout } from '../../stores/store-timeout.js';

/** The name an override gives its policy: as RateLimitService names it (`name@Class.method` for scope 'route'). */
export const overrideName = (policy: ResolvedPolicy): string =>
  policy.route === undefined ? policy.name : `${policy.name}@${policy.route}`;

/**
 * The override a checked change makes, set at `setAt`, of `identity` (as the store keeps it) under `policy`: what
 * RateLimitService.override and the command line store alike.
 */
export function storedOverride(
  policy: ResolvedPolicy,
  identity: string,
  checked: CheckedOverrideChange,
  setAt: number,
): StoredOverride {
  return {
    policy: overrideName(policy),
    identity,
    shape: policy.shape,
    ...(checked.limit === undefined ? {} : { limit: checked.limit }),
    ...(checked.burst === undefined ? {} : { burst: checked.burst }),
    ...(checked.ttlMs === undefined ? {} : { until: setAt + checked.ttlMs }),
    ...(checked.reason === undefined ? {} : { reason: checked.reason }),
    shadow: checked.shadow,
    setAt,
  };
}

/** Waits before the overrides are read again after a read failed (the store is down), doubled to the longest. */
const RETRY_MS = 1000;
const LONGEST_RETRY_MS = 30_000;

/** One policy's overrides: by the shape their identities were hashed under (one, but across a deploy), by identity. */
type PolicyOverrides = Map<string, Map<string, StoredOverride>>;

/**
 * The overrides in force on this instance (RateLimitService.override): read from the stores at start and again
 * whenever the feed of changes says they changed or reconnects, so that one set through any instance applies on
 * every one. A request looks its identity up by the stored form (the store's keyed hash), and only for policies
 * that have overrides: a policy without any costs one Map lookup. Lapsed ones are ignored as the clock passes
 * their `until`, on every instance alike.
 */
export class OverrideBook {
  private byPolicy = new Map<string, PolicyOverrides>();
  /** Dry runs in force: while there are none, no decision looks for one. */
  private shadowCount = 0;
  private reading: Promise<void> | undefined;
  private again = false;
  private retry: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MS;
  /** Reads have failed since the last one that did not: logged once, and once when one succeeds again. */
  private failing = false;
  private closed = false;
  /** What the last read found, to tell whether the next one changes anything. */
  private signature = '[]';

  constructor(
    /** The distinct stores that keep overrides (the rate limits', and the quotas' when it is another). */
    readonly storages: readonly OverrideStorage[],
    /** Where the overrides of a policy are kept: its store's, if that store keeps overrides. */
    private readonly storageOf: (policy: ResolvedPolicy) => OverrideStorage | undefined,
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    /**
     * The overrides in force changed: what this instance remembers of decisions made under the old ones (its
     * cached denials) is forgotten, so that a raised limit admits at once.
     */
    private readonly changed: () => void,
  ) {}

  /** Whether any dry run is in force. */
  get shadows(): boolean {
    return this.shadowCount > 0;
  }

  /** The override in force now for `identity` (as the request gives it) under `policy`, if any. */
  of(policy: ResolvedPolicy, identity: string): StoredOverride | undefined {
    if (this.byPolicy.size === 0) return undefined;
    const byShape = this.byPolicy.get(overrideName(policy));
    if (byShape === undefined) return undefined;
    const storage = this.storageOf(policy);
    if (storage === undefined) return undefined;
    for (const [shape, byIdentity] of byShape) {
      const found = byIdentity.get(storage.identityOf(shape, identity));
      if (found !== undefined) return found.until === undefined || found.until > this.clock.now() ? found : undefined;
    }
    return undefined;
  }

  /** Puts an override set through this instance in force here at once (the others read it from the store). */
  set(override: StoredOverride): void {
    this.put(override);
    this.changed();
  }

  /** Removes an override here at once (it was removed from the store through this instance). */
  drop(policy: string, identity: string): void {
    this.remove(policy, identity);
    this.changed();
  }

  private put(override: StoredOverride): void {
    this.remove(override.policy, override.identity);
    const byShape = this.byPolicy.get(override.policy) ?? new Map<string, Map<string, StoredOverride>>();
    this.byPolicy.set(override.policy, byShape);
    const byIdentity = byShape.get(override.shape) ?? new Map<string, StoredOverride>();
    byShape.set(override.shape, byIdentity);
    byIdentity.set(override.identity, override);
    if (override.shadow) this.shadowCount++;
  }

  private remove(policy: string, identity: string): void {
    const byShape = this.byPolicy.get(policy);
    if (byShape === undefined) return;
    for (const [shape, byIdentity] of byShape) {
      const old = byIdentity.get(identity);
      if (old === undefined) continue;
      byIdentity.delete(identity);
      if (old.shadow) this.shadowCount--;
      if (byIdentity.size === 0) byShape.delete(shape);
    }
    if (byShape.size === 0) this.byPolicy.delete(policy);
  }

  /**
   * Reads every override from the stores again, in place of what this instance holds; resolves once read (or
   * failed: logged, what it held stays in force, and it is read again later). Never rejects. Reads asked for
   * while one runs are one more read after it.
   */
  refresh(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.reading !== undefined) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.read().finally(() => {
      this.reading = undefined;
      if (this.again) {
        this.again = false;
        void this.refresh();
      }
    });
    return this.reading;
  }

  /**
   * Reads the overrides every `intervalMs` from now on: for a store without a feed of changes (a PostgreSQL pool
   * too small to spare a listening connection, a Redis client that cannot subscribe), which would otherwise hear of
   * an override set through another instance only at its next start.
   */
  poll(intervalMs: number): void {
    if (this.closed || this.poller !== undefined || this.storages.length === 0) return;
    this.poller = setInterval(() => void this.refresh(), intervalMs);
    this.poller.unref();
  }

  /** Stops reading (on shutdown). */
  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.poller);
  }

  private async read(): Promise<void> {
    clearTimeout(this.retry);
    try {
      const lists = await Promise.all(this.storages.map((s) => withTimeout(() => s.list(), this.timeoutMs)));
      // Read again and found as they were (a reconnect, an announcement of this instance's own): nothing changes.
      const read = lists.flat();
      const signature = JSON.stringify(read.map((o) => JSON.stringify(o)).sort());
      if (signature !== this.signature) {
        this.signature = signature;
        this.byPolicy = new Map();
        this.shadowCount = 0;
        for (const o of read) this.put(o);
        this.changed();
      }
      this.retryMs = RETRY_MS;
      if (this.failing) this.logger.log('The rate-limit overrides are read again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) {
        this.logger.warn(
          `Could not read the rate-limit overrides (${(error as Error).message}): those read before stay in ` +
            'force; reading again until the store answers',
        );
      }
      this.failing = true;
      this.retry = setTimeout(() => void this.refresh(), this.retryMs);
      this.retry.unref();
      this.retryMs = Math.min(this.retryMs * 2, LONGEST_RETRY_MS);
    }
  }
}
