import type { FeedConnection, FeedEvents } from '../../store-changes.js';

/**
 * What the Redis store needs of a client, whichever package made it (ioredis, iovalkey, node-redis, Valkey
 * GLIDE): one implementation per client family (ioredis-driver.ts, node-redis-driver.ts, glide-driver.ts), chosen
 * by driverOf() from the
 * object given. Replies come back as ioredis gives them (integers as numbers, arrays, null for nil), and an error
 * Redis answered with as a RedisReplyError.
 */
export interface RedisDriver {
  /** Whether the client is a Cluster: the store then makes one call per hash slot. */
  readonly isCluster: boolean;
  /** Where the client connects, for logs and errors (never a password). */
  readonly address: string;
  /** A command; on a Cluster it goes to the master of `key`'s slot (to any node without a key). */
  command(args: readonly string[], key?: string): Promise<unknown>;
  /** EVALSHA of a loaded script (on a Cluster, to the master of the first key's slot). */
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** EVAL of a script, which Redis caches (on a Cluster, to the master of the first key's slot). */
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  /** A connection to each master (a standalone Redis: this one), for what must run on every node. */
  masters(): Promise<RedisNode[]>;
  /** Whether subscribe() can make a connection of its own for the change feed. */
  readonly canSubscribe: boolean;
  /**
   * A new connection of its own (the `attempt`-th Cluster node's), subscribed to `channel`: no reconnect, no
   * resubscription and no queue (the feed does that itself, and must know when it happens).
   */
  subscribe(attempt: number, channel: string, events: FeedEvents): Promise<FeedConnection>;
  /**
   * The module's own connection, made from this client's settings with fail-fast ones over them: no offline
   * queue (a command fails at once while disconnected), nothing replayed after a reconnect, and reconnecting
   * in the background. The client given is left as it is. `timeoutMs` is the module's `timeout`, for a client
   * that bounds its own requests (GLIDE's `requestTimeout`). GLIDE makes its clients asynchronously.
   */
  ownConnection(settings?: { timeoutMs?: number | undefined }): OwnConnection | Promise<OwnConnection>;
}

/**
 * The script calls and PING of a driver whose client sends any command as an array of strings (node-redis'
 * sendCommand, GLIDE's customCommand): each is a command(), routed by its first key.
 */
export abstract class CommandArrayDriver {
  abstract command(args: readonly string[], key?: string): Promise<unknown>;

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.command(['EVALSHA', sha1, String(keys.length), ...keys, ...args], keys[0]);
  }

  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.command(['EVAL', script, String(keys.length), ...keys, ...args], keys[0]);
  }

  ping(): Promise<unknown> {
    return this.command(['PING']);
  }
}

/** One Redis server of a client (a Cluster master, or the standalone server). */
export interface RedisNode {
  command(args: readonly string[]): Promise<unknown>;
}

/** A connection the module made, and closes. */
export interface OwnConnection {
  /** The client object, as the store is given it. */
  readonly client: object;
  /** Resolves once it can take commands (or rejects when it gave up). */
  ready(): Promise<void>;
  /** Connection errors (the client would otherwise report them as unhandled). */
  onError(listener: (error: Error) => void): void;
  close(): void;
}

/** An error Redis answered with (NOSCRIPT, a wrong type, a script's error), whichever client read it. */
export class RedisReplyError extends Error {
  override readonly name = 'ReplyError';
}

/** An error Redis answered with (as opposed to a connection that failed): ioredis' ReplyError, or ours. */
export function isReplyError(error: unknown): error is RedisReplyError {
  return error instanceof Error && error.name === 'ReplyError';
}

/** How long a subscriber's connection may take to connect. */
export const SUBSCRIBER_CONNECT_TIMEOUT_MS = 1000;
/** How long connecting and subscribing may take before the subscriber's connection is given up. */
export const SUBSCRIBER_OPEN_TIMEOUT_MS = 2000;

/** Reconnect after 50 ms, 100 ms, ... at most 2 s apart (ioredis' default; for node-redis too). */
export const reconnectDelayMs = (attempt: number): number => Math.min(attempt * 50, 2000);
