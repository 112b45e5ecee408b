import {
  DENY_CACHE_TRUST_MS,
  type RateLimitAnnouncement,
  type RateLimitChangeListener,
  type RateLimitStoreChange,
} from './engine-store.js';

/** One connection of a feed's listener, subscribed. */
export interface FeedConnection {
  /** A round trip on the connection: its answer confirms every announcement sent before it. */
  ping(): Promise<unknown>;
  close(): void;
}

/** What a feed's connection reports. */
export interface FeedEvents {
  /** A message on the feed's channel. */
  message(payload: string): void;
  /** The connection is gone (`reason`). */
  closed(reason: Error): void;
}

/** Opens the `attempt`-th connection and subscribes it; rejects when it cannot. */
export type OpenFeed = (attempt: number, events: FeedEvents) => Promise<FeedConnection>;

/** How often the listener pings: each answer confirms what was announced before it. */
const PING_MS = Math.floor(DENY_CACHE_TRUST_MS / 3);
/** A ping unanswered for this long ends the connection (a server that hangs never closes it). */
const PING_TIMEOUT_MS = 1000;
/** How long opening and subscribing a connection may take. */
const OPEN_TIMEOUT_MS = 3000;
/** Waits before each new connection after a failure, the last one repeated. */
const RECONNECT_MS = [100, 250, 500, 1000] as const;

/**
 * The message that announces `changes`: JSON, `[[policy id, key], ...]`, `"*"` for every key, or `"overrides"`
 * (an instance of a version before overrides reads it as a message it does not know: it forgets its cached
 * denials, which is safe).
 */
export const encodeChanges = (changes: RateLimitAnnouncement): string =>
  changes === 'everything'
    ? '"*"'
    : changes === 'overrides'
      ? '"overrides"'
      : JSON.stringify(changes.map(({ policy, key }) => [policy, key]));

/** The changes a message announces, or undefined when it is not a message of the feed's. */
function decodeChanges(message: string): RateLimitAnnouncement | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (parsed === '*') return 'everything';
  if (parsed === 'overrides') return 'overrides';
  if (!Array.isArray(parsed)) return undefined;
  const changes: RateLimitStoreChange[] = [];
  for (const entry of parsed) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string') return undefined;
    changes.push({ policy: entry[0], key: entry[1] });
  }
  return changes;
}

/**
 * Listens on connections that `open` makes, one at a time, until the returned function is called: tells the
 * listener live() once subscribed, confirmed() at each answer to a ping (every PING_MS), lost() when the
 * connection closes or a ping goes unanswered for PING_TIMEOUT_MS, and makes a new one. Resolves once the first
 * connection subscribed or failed.
 */
export async function listenOn(open: OpenFeed, listener: RateLimitChangeListener): Promise<() => Promise<void>> {
  const subscription = new Subscription(open, listener);
  await subscription.first;
  return () => subscription.stop();
}

class Subscription {
  readonly first: Promise<void>;
  private firstDone!: () => void;
  private stopped = false;
  private stopCurrent: (() => void) | undefined;
  private wake: (() => void) | undefined;
  private readonly ended: Promise<void>;

  constructor(
    private readonly open: OpenFeed,
    private readonly listener: RateLimitChangeListener,
  ) {
    this.first = new Promise((resolve) => (this.firstDone = resolve));
    this.ended = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopCurrent?.();
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

  /** One connection, from opening to its end: resolves with why it ended, and whether it had subscribed. */
  private session(attempt: number): Promise<{ reason: Error; wasLive: boolean }> {
    return new Promise((resolve) => {
      let connection: FeedConnection | undefined;
      let live = false;
      let done = false;
      let pinger: NodeJS.Timeout | undefined;
      const end = (reason: Error) => {
        if (done) return;
        done = true;
        clearInterval(pinger);
        this.stopCurrent = undefined;
        connection?.close();
        resolve({ reason, wasLive: live });
      };
      this.stopCurrent = () => end(new Error('stopped'));
      const events: FeedEvents = {
        message: (payload) => {
          if (done) return;
          const changes = decodeChanges(payload);
          // Not one of the feed's messages: which keys it meant is unknown, so everything may have changed.
          if (changes === undefined) this.listener.live(performance.now());
          else if (changes === 'overrides') this.listener.overrides?.();
          else this.listener.changed(changes);
        },
        closed: (reason) => end(reason),
      };
      const since = performance.now();
      // A connection that takes too long is given up (and closed whenever it comes).
      const giveUp = setTimeout(() => end(new Error(`not subscribed within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS);
      giveUp.unref();
      this.open(attempt, events).then(
        (opened) => {
          clearTimeout(giveUp);
          connection = opened;
          if (done) {
            opened.close();
            return;
          }
          live = true;
          this.listener.live(since);
          this.firstDone();
          pinger = this.ping(opened, end);
        },
        (error: unknown) => {
          clearTimeout(giveUp);
          end(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /** Pings every PING_MS, each answer a confirmation; one unanswered for PING_TIMEOUT_MS ends the connection. */
  private ping(connection: FeedConnection, end: (reason: Error) => void): NodeJS.Timeout {
    let outstanding: number | undefined;
    const timer = setInterval(() => {
      const now = performance.now();
      if (outstanding !== undefined) {
        if (now - outstanding > PING_TIMEOUT_MS) end(new Error(`no answer to a ping within ${PING_TIMEOUT_MS} ms`));
        return;
      }
      const sentAt = now;
      outstanding = sentAt;
      connection.ping().then(
        () => {
          outstanding = undefined;
          this.listener.confirmed(sentAt);
        },
        (error: unknown) => end(error instanceof Error ? error : new Error(String(error))),
      );
    }, PING_MS);
    timer.unref();
    return timer;
  }
}
