import { createHash } from 'node:crypto';

import type { Pool, PoolClient } from 'pg';

import { encodeChanges, type FeedConnection, type FeedEvents, listenOn } from '../change-feed.js';
import type { RateLimitChangeListener, RateLimitStoreChange, RateLimitStoreChanges } from '../rate-limit-store.js';

/** A NOTIFY payload must stay under 8000 bytes: announcements longer than this go out in parts. */
const MAX_PAYLOAD = 7000;
/** The listener's ping, named so that an operator (or a test) can find its backend in pg_stat_activity. */
export const FEED_PING_SQL = 'SELECT 1 AS nest_rate_limit_feed';

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
 * what came before it, and a connection that fails is destroyed, not given back.
 */
export class PostgresChangeFeed implements RateLimitStoreChanges {
  constructor(
    private readonly pool: Pool,
    private readonly channel: string,
  ) {}

  async announce(changes: readonly RateLimitStoreChange[]): Promise<void> {
    for (const payload of payloads(changes)) await this.pool.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
  }

  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>> {
    return listenOn((_, events) => this.subscribe(events), listener);
  }

  private async subscribe(events: FeedEvents): Promise<FeedConnection> {
    const client: PoolClient = await this.pool.connect();
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
    return { ping: () => client.query(FEED_PING_SQL), close: release };
  }
}
