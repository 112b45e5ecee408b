import { createHash } from 'node:crypto';

import { encodeChanges, type FeedConnection, type FeedEvents, listenOn } from '../store-changes.js';
import type {
  RateLimitAnnouncement,
  RateLimitChangeListener,
  RateLimitStoreChange,
  RateLimitStoreChanges,
} from '../engine-store.js';
import type { KeyedPolicy, StoredIdentities } from '../storage-key.js';

/** A pooled `pg` client, as the listener uses it (the published types name no type of pg's). */
interface ListeningClient {
  query(text: string): Promise<unknown>;
  release(destroy: boolean): void;
  on(event: 'notification', listener: (message: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** A `pg` Pool, as the feed uses it. */
export interface FeedPool {
  query(text: string, values: unknown[]): Promise<unknown>;
  connect(): Promise<ListeningClient>;
}

/** A NOTIFY payload must stay under 8000 bytes: announcements longer than this go out in parts. */
const MAX_PAYLOAD = 7000;
/**
 * The listener's ping, naming its channel so that an operator (or a test) can find its backend in
 * pg_stat_activity. The channel is made of hex digits only (feedChannel), safe in a literal.
 */
export const feedPingSql = (channel: string): string => `SELECT '${channel}' AS nest_rate_limit_feed`;

/**
 * The channel of a schema and key prefix: a name of its own per store (two apps on one database, or the tests
 * of one run, each in a schema, never hear each other), short enough for PostgreSQL (63 bytes at most).
 */
export const feedChannel = (schema: string, keyPrefix: string): string =>
  `nest_rate_limit_${createHash('sha256').update(`${schema}\0${keyPrefix}`).digest('hex').slice(0, 24)}`;

/** Announcements cut into payloads that NOTIFY takes. */
function payloads(changes: readonly RateLimitStoreChange[]): string[] {
  const out: string[] = [];
  let part: RateLimitStoreChange[] = [];
  let size = 2;
  for (const change of changes) {
    const length = Buffer.byteLength(encodeChanges([change]));
    if (part.length > 0 && size + length > MAX_PAYLOAD) {
      out.push(encodeChanges(part));
      part = [];
      size = 2;
    }
    part.push(change);
    size += length;
  }
  if (part.length > 0) out.push(encodeChanges(part));
  return out;
}

/**
 * The PostgreSQL store's feed of changes: NOTIFY (pg_notify) on the store's channel, heard through LISTEN on a
 * connection of the pool that the listener keeps for itself (the pool has one fewer for statements). A
 * notification reaches every session listening when it was sent; each answer to the listener's ping confirms
 * what came before it, and a connection that fails is destroyed, not given back. Keys travel as the store's rows
 * hold them (a keyed hash by default).
 */
export class PostgresChangeFeed implements RateLimitStoreChanges {
  constructor(
    private readonly pool: FeedPool,
    private readonly channel: string,
    private readonly identities: StoredIdentities,
  ) {}

  keyOf(policy: KeyedPolicy, key: string): string {
    return this.identities.of(policy.shape, key);
  }

  async announce(changes: RateLimitAnnouncement): Promise<void> {
    if (typeof changes === 'string') {
      await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, encodeChanges(changes)]);
      return;
    }
    for (const payload of payloads(changes)) await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
  }

  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>> {
    return listenOn((_, events) => this.subscribe(events), listener);
  }

  private async subscribe(events: FeedEvents): Promise<FeedConnection> {
    const client = await this.pool.connect();
    let released = false;
    // Destroyed, never given back to the pool: it listens, and may be broken.
    const release = () => {
      if (released) return;
      released = true;
      client.release(true);
    };
    client.on('notification', ({ channel, payload }) => {
      if (channel === this.channel && payload !== undefined) events.message(payload);
    });
    client.on('error', (error) => {
      events.closed(error);
      release();
    });
    client.on('end', () => events.closed(new Error('the connection ended')));
    try {
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      release();
      throw error;
    }
    const ping = feedPingSql(this.channel);
    return { ping: () => client.query(ping), close: release };
  }
}
