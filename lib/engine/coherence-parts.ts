import type { Logger } from '../util/logger.js';

import type { Clock } from '../util/clock.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import type { EngineStore } from '../stores/engine-store.js';
import type { OverrideStorage } from '../stores/overrides.js';
import { DENY_CACHE_MS, DenyCache } from './coherence/deny-cache.js';
import { ChangeFeed } from './coherence/invalidation-feed.js';
import { LeaseBook } from './leases/lease-book.js';
import { OverrideBook } from './overrides/override-book.js';

/**
 * How often an instance reads the overrides again when its store has no feed of changes to announce them (a
 * PostgreSQL pool of fewer than 3 connections, a Redis client that cannot subscribe): one small read a second, so
 * that an override reaches every instance within about a second all the same.
 */
export const OVERRIDES_POLL_MS = 1000;

/** What an instance keeps in step with the others through the store's feed of changes. */
export interface Coherence {
  /** Denials of a remote store, answered locally until they end (pointless for the in-process store). */
  readonly denyCache: DenyCache | undefined;
  /** Units this instance took ahead for leased policies (RateLimitPolicy.lease), where a store grants them. */
  readonly leases: LeaseBook | undefined;
  /** The overrides of limits per identity in force (RateLimitService.override), read from the stores. */
  readonly overrides: OverrideBook;
  /** Changes outside decisions, between these and the other instances'. */
  readonly feed: ChangeFeed;
}

/** The engine's options these are made from (DecisionEngineOptions). */
interface CoherenceOptions {
  readonly clock: Clock;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly denyCacheMs?: number;
  readonly realNow?: () => number;
}

/**
 * The engine's cache of denials, leases and overrides, and the feed of changes that keeps them true. The cache and
 * the leases find what the feed announces by the key as the feed names it (the store's keyed hash); a change of
 * the overrides makes the cache forget its denials, so that a raised limit admits at once.
 */
export function coherenceOf(
  options: CoherenceOptions,
  store: EngineStore,
  quotaStore: EngineStore,
  overridesOf: (policy: ResolvedPolicy) => OverrideStorage | undefined,
): Coherence {
  const changes = store.changes;
  const feedKey = (policy: ResolvedPolicy, key: string): string => changes?.keyOf?.(policy, key) ?? key;
  const trustMs = options.denyCacheMs ?? DENY_CACHE_MS;
  const denyCache =
    store.inProcess === true || trustMs === 0
      ? undefined
      : new DenyCache({ feedKey, trustMs, realNow: options.realNow });
  const leasing = (s: EngineStore) => s.grantsUpTo === true && s.inProcess !== true;
  const leases = leasing(store) || leasing(quotaStore) ? new LeaseBook(undefined, feedKey) : undefined;
  const overrides = new OverrideBook(
    [...new Set([store.overrides, quotaStore.overrides])].filter((s) => s !== undefined),
    overridesOf,
    options.clock,
    options.timeoutMs,
    options.logger,
    // Leases stay: their units are counted in the store under any limit.
    () => denyCache?.forgetAll(),
  );
  const feed = new ChangeFeed(changes, denyCache, options.timeoutMs, options.logger, leases, overrides);
  // Without a feed, another instance's override is heard of by reading them again: within OVERRIDES_POLL_MS.
  if (changes === undefined && store.inProcess !== true) overrides.poll(OVERRIDES_POLL_MS);
  return { denyCache, leases, overrides, feed };
}
