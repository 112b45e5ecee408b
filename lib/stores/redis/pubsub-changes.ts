import { encodeChanges, listenOn } from '../store-changes.js';
import type { RateLimitAnnouncement, RateLimitChangeListener, RateLimitStoreChanges } from '../engine-store.js';
import type { KeyedPolicy, StoredIdentities } from '../storage-key.js';
import type { RedisDriver } from './clients/redis-driver.js';

/**
 * The Redis store's feed of changes: PUBLISH on `<keyPrefix>changes`, to a subscriber in each instance on a
 * connection of its own (for a Cluster, on one of its nodes: Redis forwards a PUBLISH to every node), which
 * the client's driver makes. Pub/sub delivers at most once, so the listener PINGs on that connection: each
 * PONG confirms what came before it. Keys travel as the store's keys hold them (a keyed hash by default).
 */
export class RedisChangeFeed implements RateLimitStoreChanges {
  constructor(
    private readonly client: RedisDriver,
    private readonly channel: string,
    private readonly identities: StoredIdentities,
  ) {}

  keyOf(policy: KeyedPolicy, key: string): string {
    return this.identities.of(policy.shape, key);
  }

  async announce(changes: RateLimitAnnouncement): Promise<void> {
    if (typeof changes === 'string' || changes.length > 0)
      await this.client.command(['PUBLISH', this.channel, encodeChanges(changes)]);
  }

  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>> {
    return listenOn((attempt, events) => this.client.subscribe(attempt, this.channel, events), listener);
  }
}
