import {
  DENY_CACHE_TRUST_MS,
  type RateLimitChangeListener,
  type RateLimitStoreChange,
  type RateLimitStoreChanges,
} from '../rate-limit-store.js';

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

/** How often the subscriber PINGs: a PONG confirms that every message published before the PING arrived. */
const PING_MS = Math.floor(DENY_CACHE_TRUST_MS / 3);
/** A PING unanswered for this long ends the connection (a Redis that hangs never closes it). */
const PING_TIMEOUT_MS = 1000;
/** Waits before each new connection after a failure, the last one repeated. */
const RECONNECT_MS = [100, 250, 500, 1000] as const;

/** Whether a client can be given a feed: an ioredis Redis, or a Cluster (which can list its nodes). */
export function canFeed(client: object): boolean {
  const c = client as Partial<Duplicable & ClusterNodes & FeedClient>;
  return c.isCluster === true ? typeof c.nodes === 'function' : typeof c.duplicate === 'function';
}

/**
 * The Redis store's feed of changes: PUBLISH on `<keyPrefix>changes`, to a subscriber in each instance on a
 * connection of its own (for a Cluster, on one of its nodes: Redis forwards a PUBLISH to every node). Pub/sub
 * delivers at most once: the subscriber PINGs every PING_MS, and each PONG confirms what came before it; a
 * connection that closes or stops answering is replaced, and the listener told (lost, then live).
 */
export class RedisChangeFeed implements RateLimitStoreChanges {
  constructor(
    private readonly client: FeedClient,
    private readonly channel: string,
  ) {}

  async announce(changes: readonly RateLimitStoreChange[]): Promise<void> {
    if (changes.length === 0) return;
    await this.client.call('PUBLISH', this.channel, JSON.stringify(changes.map(({ policy, key }) => [policy, key])));
  }

  async listen(listener: RateLimitChangeListener): Promise<() => Promise<void>> {
    const subscription = new Subscription((attempt) => this.subscriber(attempt), this.channel, listener);
    await subscription.first;
    return () => subscription.stop();
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

/** The changes a message announces, or undefined when it is not one of the feed's. */
function parseChanges(message: string): RateLimitStoreChange[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const changes: RateLimitStoreChange[] = [];
  for (const entry of parsed) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string') return undefined;
    changes.push({ policy: entry[0], key: entry[1] });
  }
  return changes;
}

/** One listener's subscription: a connection at a time, replaced until stop(). */
class Subscription {
  readonly first: Promise<void>;
  private firstDone!: () => void;
  private stopped = false;
  private current: Subscriber | undefined;
  private wake: (() => void) | undefined;
  private readonly ended: Promise<void>;

  constructor(
    private readonly open: (attempt: number) => Subscriber,
    private readonly channel: string,
    private readonly listener: RateLimitChangeListener,
  ) {
    this.first = new Promise((resolve) => (this.firstDone = resolve));
    this.ended = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.disconnect();
    this.wake?.();
    await this.ended;
  }

  private async run(): Promise<void> {
    let failures = 0;
    for (let attempt = 0; !this.stopped; attempt++) {
      const { reason, wasLive } = await this.session(attempt);
      this.firstDone();
      if (this.stopped) return;
      this.listener.lost(reason);
      failures = wasLive ? 0 : failures + 1;
      await this.pause(RECONNECT_MS[Math.min(failures, RECONNECT_MS.length - 1)] as number);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** One connection, from connecting to its end: resolves with why it ended, and whether it had subscribed. */
  private session(attempt: number): Promise<{ reason: Error; wasLive: boolean }> {
    return new Promise((resolve) => {
      let sub: Subscriber;
      try {
        sub = this.open(attempt);
      } catch (error) {
        resolve({ reason: error as Error, wasLive: false });
        return;
      }
      this.current = sub;
      let live = false;
      let done = false;
      let lastError: Error | undefined;
      let pinger: NodeJS.Timeout | undefined;
      const end = (reason: Error) => {
        if (done) return;
        done = true;
        clearInterval(pinger);
        this.current = undefined;
        sub.disconnect();
        resolve({ reason, wasLive: live });
      };
      sub.on('error', (error) => (lastError = error));
      sub.on('close', () => end(lastError ?? new Error('the connection closed')));
      sub.on('message', (channel, message) => {
        if (channel !== this.channel) return;
        const changes = parseChanges(message);
        // Not one of the feed's messages: which keys it meant is unknown, so everything may have changed.
        if (changes === undefined) this.listener.live(performance.now());
        else this.listener.changed(changes);
      });
      const since = performance.now();
      sub
        .connect()
        .then(() => sub.subscribe(this.channel))
        .then(() => {
          if (done) return;
          live = true;
          this.listener.live(since);
          this.firstDone();
          pinger = this.ping(sub, end);
        })
        .catch((error: unknown) => end(error as Error));
    });
  }

  /** PINGs every PING_MS, each PONG a confirmation; a PING unanswered for PING_TIMEOUT_MS ends the connection. */
  private ping(sub: Subscriber, end: (reason: Error) => void): NodeJS.Timeout {
    let outstanding: number | undefined;
    const timer = setInterval(() => {
      const now = performance.now();
      if (outstanding !== undefined) {
        if (now - outstanding > PING_TIMEOUT_MS) end(new Error(`no answer to PING within ${PING_TIMEOUT_MS} ms`));
        return;
      }
      const sentAt = now;
      outstanding = sentAt;
      sub.ping().then(
        () => {
          outstanding = undefined;
          this.listener.confirmed(sentAt);
        },
        (error: unknown) => end(error as Error),
      );
    }, PING_MS);
    timer.unref();
    return timer;
  }
}
