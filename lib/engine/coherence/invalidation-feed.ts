import type { Logger } from '../../util/logger.js';

import type { ResolvedPolicy } from '../../policy/policy.types.js';
import {
  DENY_CACHE_TRUST_MS,
  type RateLimitAnnouncement,
  type RateLimitStoreChange,
  type RateLimitStoreChanges,
} from '../../stores/engine-store.js';
import { withTimeout } from '../../stores/store-timeout.js';
import type { DenyCache } from './deny-cache.js';
import type { LeaseBook } from '../leases/lease-book.js';

/** Waits (ms) before each new try of an announcement that failed; then it is given up, and logged. */
const ANNOUNCE_RETRY_MS = [50, 200] as const;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * Changes of stored state outside a decision (reset, unblock, block, refunds), between this process's cache of
 * denials and the other instances': each change lifts the key's cached denial here at once, and is announced
 * on the store's feed (gathered per turn of the event loop), whose news from the others lift theirs. Without a
 * feed (the memory store, PostgreSQL, a store of your own without `changes`) the cache alone bounds how long a
 * denial answers (DenyCache). Announcements name keys as the feed's keyOf does (the store's keyed hash of the
 * identity), never as the raw identity; the cache and the leases find their entries by that name.
 */
export class ChangeFeed {
  private queued: RateLimitStoreChange[] = [];
  private announcing: Promise<void> | undefined;
  private stopListening: (() => Promise<void>) | undefined;
  private down = false;

  constructor(
    private readonly changes: RateLimitStoreChanges | undefined,
    private readonly cache: DenyCache | undefined,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    /** Leases lapse as cached denials are forgotten: a reset or block elsewhere must reach them too. */
    private readonly leases?: LeaseBook,
    /** The overrides in force (RateLimitService.override), read again when the feed says they changed. */
    private readonly overrides?: { refresh(): Promise<void> },
  ) {}

  /**
   * Listens to the feed (when the store has one, and there is a cache to keep true or overrides to hear of); once
   * the first try is done.
   */
  async start(): Promise<void> {
    const { cache, changes, overrides } = this;
    if (changes === undefined || (cache === undefined && overrides === undefined)) return;
    if (this.stopListening !== undefined) return;
    const leases = this.leases;
    this.stopListening = await changes.listen({
      changed: (list) => {
        if (list === 'everything') {
          cache?.forgetAll();
          leases?.forgetAll();
          // resetAll removed the overrides too.
          void overrides?.refresh();
          return;
        }
        const feedIds = list.map(({ policy, key }) => `${policy}\n${key}`);
        cache?.changed(feedIds);
        for (const feedId of feedIds) leases?.forget(feedId);
      },
      confirmed: (sentAt) => cache?.confirmed(sentAt),
      overrides: () => void overrides?.refresh(),
      live: (since) => {
        cache?.live(since);
        leases?.forgetAll();
        // What was announced while the feed was down is unknown: the overrides too are read again.
        void overrides?.refresh();
        if (!this.down) return;
        this.down = false;
        this.logger.log('The feed of changes is back: cached denials answer until they end again');
      },
      lost: (reason) => {
        leases?.forgetAll();
        if (this.down) return;
        this.down = true;
        this.logger.warn(
          `The feed of changes is down (${reason.message}): until it is back, a cached denial answers for at ` +
            `most ${DENY_CACHE_TRUST_MS} ms before the store is asked again`,
        );
      },
    });
  }

  /**
   * `items` changed outside a decision: forgets their cached denials here, and announces them to the other
   * instances. Resolves once announced (or given up, logged); never rejects.
   */
  changed(items: readonly { policy: ResolvedPolicy; key: string }[]): Promise<void> {
    const named = items.map(({ policy, key }) => ({ policy: policy.id, key: this.keyOf(policy, key) }));
    if (this.cache !== undefined || this.leases !== undefined) {
      const feedIds = named.map(({ policy, key }) => `${policy}\n${key}`);
      this.cache?.changed(feedIds);
      for (const feedId of feedIds) this.leases?.forget(feedId);
    }
    if (this.changes === undefined || items.length === 0) return Promise.resolve();
    this.queued.push(...named);
    this.announcing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.announce());
    return this.announcing;
  }

  /** The overrides changed through this instance: tells the other instances to read them again. */
  async overridesChanged(): Promise<void> {
    if (this.changes !== undefined) await this.send('overrides');
  }

  /** Every key changed (RateLimitService.resetAll): forgets every cached denial here, and announces it. */
  async everything(): Promise<void> {
    this.cache?.forgetAll();
    this.leases?.forgetAll();
    await this.overrides?.refresh();
    if (this.changes !== undefined) await this.send('everything');
  }

  async dispose(): Promise<void> {
    const stop = this.stopListening;
    this.stopListening = undefined;
    await stop?.();
  }

  /** A key as the feed names it (the store's keyOf: its keyed hash of the identity). */
  private keyOf(policy: ResolvedPolicy, key: string): string {
    return this.changes?.keyOf?.(policy, key) ?? key;
  }

  private async announce(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    this.announcing = undefined;
    await this.send(batch);
  }

  /** Sends an announcement, tried again twice when it fails, then given up (logged). */
  private async send(batch: RateLimitAnnouncement): Promise<void> {
    const changes = this.changes as RateLimitStoreChanges;
    for (let attempt = 0; ; attempt++) {
      try {
        await withTimeout(() => changes.announce(batch), this.timeoutMs);
        return;
      } catch (error) {
        const wait = ANNOUNCE_RETRY_MS[attempt];
        if (wait === undefined) {
          if (batch === 'overrides') {
            this.logger.warn(
              `Could not announce a change of the overrides (${(error as Error).message}): the other instances ` +
                'read it when their feed of changes reconnects',
            );
            return;
          }
          const keys = batch === 'everything' ? ['every key'] : batch.map(({ policy, key }) => `${policy} ${key}`);
          this.logger.warn(
            `Could not announce a change of ${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ` and ${keys.length - 3} more` : ''} ` +
              `(${(error as Error).message}): another instance may deny it from its cache of denials until that denial ends`,
          );
          return;
        }
        await sleep(wait);
      }
    }
  }
}
