import { encodeChanges, type FeedConnection, type FeedEvents, listenOn } from '../change-feed.js';
import type { RateLimitChangeListener, RateLimitStoreChange, RateLimitStoreChanges } from '../rate-limit-store.js';

/** The parts of an ioredis connection the subscriber uses. */
interface Subscriber {
  connect(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  ping(): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'close' | 'error', listener: (error?: Error) => void): unknown;
  disconnect(): void;
}

/** An ioredis connection the feed can make its subscriber from. */
interface Duplicable {
  duplicate(options: object): unknown;
}

/** An ioredis Cluster: the subscriber connects to one of its nodes. */
interface ClusterNodes {
  nodes(role: 'all'): Duplicable[];
}

/** An ioredis `Redis` or `Cluster` the feed announces on. */
export interface FeedClient {
  readonly isCluster: boolean;
  call(command: string, ...args: string[]): Promise<unknown>;
}

/**
 * The subscriber's own connection: connected when asked, no reconnect, no resubscription and no queue of
 * ioredis' (the feed does all that itself, and must know when it happens: announcements are missed meanwhile).
 */
const SUBSCRIBER_OPTIONS = {
  lazyConnect: true,
  enableOfflineQueue: false,
  autoResubscribe: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
  connectTimeout: 1000,
};

/** How long connecting and subscribing may take before the connection is given up. */
const OPEN_TIMEOUT_MS = 2000;

/** Whether a client can be given a feed: an ioredis Redis, or a Cluster (which can list its nodes). */
export function canFeed(client: object): boolean {
  const c = client as Partial<Duplicable & ClusterNodes & FeedClient>;
  return c.isCluster === true ? typeof c.nodes === 'function' : typeof c.duplicate === 'function';
}

/**
 * The Redis store's feed of changes: PUBLISH on `<keyPrefix>changes`, to a subscriber in each instance on a
 * connection of its own (for a Cluster, on one of its nodes: Redis forwards a PUBLISH to every node). Pub/sub
 * delivers at most once, so the listener PINGs on that connection: each PONG confirms what came before it.
 */
export class RedisChangeFeed implements RateLimitStoreChanges {
  constructor(
    private readonly client: FeedClient,
    private readonly channel: string,
  ) {}

  async announce(changes: readonly RateLimitStoreChange[] | 'everything'): Promise<void> {
    if (changes.length > 0) await this.client.call('PUBLISH', this.channel, encodeChanges(changes));
  }

  listen(listener: RateLimitChangeListener): Promise<() => Promise<void>> {
    return listenOn((attempt, events) => this.subscribe(attempt, events), listener);
  }

  private async subscribe(attempt: number, events: FeedEvents): Promise<FeedConnection> {
    const sub = this.subscriber(attempt);
    let lastError: Error | undefined;
    sub.on('error', (error) => (lastError = error));
    sub.on('close', () => events.closed(lastError ?? new Error('the connection closed')));
    sub.on('message', (channel, message) => {
      if (channel === this.channel) events.message(message);
    });
    // A server that accepts the connection but never answers (SIGSTOP) must not hold it.
    const giveUp = setTimeout(() => sub.disconnect(), OPEN_TIMEOUT_MS);
    try {
      await sub.connect();
      await sub.subscribe(this.channel);
    } catch (error) {
      sub.disconnect();
      throw error;
    } finally {
      clearTimeout(giveUp);
    }
    return { ping: () => sub.ping(), close: () => sub.disconnect() };
  }

  /** A new connection for the subscriber: a copy of the client's, or of the `attempt`-th Cluster node's. */
  private subscriber(attempt: number): Subscriber {
    if (!this.client.isCluster)
      return (this.client as unknown as Duplicable).duplicate(SUBSCRIBER_OPTIONS) as Subscriber;
    const nodes = (this.client as unknown as ClusterNodes).nodes('all');
    const node = nodes[attempt % Math.max(1, nodes.length)];
    if (node === undefined) throw new Error('the Cluster has no node connected yet');
    return node.duplicate(SUBSCRIBER_OPTIONS) as Subscriber;
  }
}
