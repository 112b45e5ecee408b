import type { Cluster, Redis, RedisOptions } from 'ioredis';

import type { FeedConnection, FeedEvents } from '../../store-changes.js';
import type { RedisClient, RedisConnection } from '../../client-types.js';
import { redisAddress } from '../../store-description.js';
import {
  type OwnConnection,
  type RedisDriver,
  type RedisNode,
  SUBSCRIBER_CONNECT_TIMEOUT_MS,
  SUBSCRIBER_OPEN_TIMEOUT_MS,
} from './redis-driver.js';

// ioredis and iovalkey (a fork of ioredis 5 that kept its API: call, evalsha, duplicate, isCluster, nodes,
// options, status) are driven alike. Only their types are named here, never loaded: either may be missing.

/**
 * How the module's own connection behaves: a command fails at once while disconnected instead of waiting in
 * a queue, and nothing is replayed after a reconnect — a replayed consume would charge requests that were
 * already answered under the fail mode.
 */
const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  // Commands issued in the same tick go out in one write: many concurrent requests, few syscalls.
  enableAutoPipelining: true,
};

/** The subscriber's connection: connected when asked, no reconnect, no resubscription and no queue. */
const SUBSCRIBER: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  autoResubscribe: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
  connectTimeout: SUBSCRIBER_CONNECT_TIMEOUT_MS,
};

/** Whether `client` has the commands of an ioredis (or iovalkey) Redis or Cluster. */
export const IOREDIS_COMMANDS = ['call', 'evalsha', 'eval', 'script', 'ping'] as const;

/** An ioredis Redis, or a Cluster (which has `nodes`). */
type IoredisFull = Redis & Partial<Pick<Cluster, 'nodes'>>;

/** The driver of an ioredis or iovalkey `Redis` or `Cluster`. */
export class IoredisDriver implements RedisDriver {
  readonly isCluster: boolean;
  readonly address: string;
  readonly canSubscribe: boolean;
  private readonly full: IoredisFull;

  constructor(private readonly client: RedisClient) {
    this.isCluster = client.isCluster;
    this.full = client as unknown as IoredisFull;
    this.address = 'options' in client ? redisAddress(client as RedisConnection) : 'Redis';
    // A Cluster's subscriber connects to one of its nodes, which it must be able to list.
    this.canSubscribe = client.isCluster
      ? typeof this.full.nodes === 'function'
      : typeof this.full.duplicate === 'function';
  }

  command([name, ...args]: readonly string[]): Promise<unknown> {
    // ioredis routes a Cluster's command by the keys it finds in it.
    return this.client.call(name as string, ...args);
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.client.evalsha(sha1, keys.length, ...keys, ...args);
  }

  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.client.eval(script, keys.length, ...keys, ...args);
  }

  ping(): Promise<unknown> {
    return this.client.ping();
  }

  async masters(): Promise<RedisNode[]> {
    const nodes: Redis[] = this.isCluster ? (this.full.nodes?.('master') ?? []) : [this.full];
    return nodes.map((node) => ({ command: ([name, ...args]) => node.call(name as string, ...args) }));
  }

  async subscribe(attempt: number, channel: string, events: FeedEvents): Promise<FeedConnection> {
    const sub = this.subscriber(attempt);
    let lastError: Error | undefined;
    sub.on('error', (error: Error) => (lastError = error));
    sub.on('close', () => events.closed(lastError ?? new Error('the connection closed')));
    sub.on('message', (from: string, message: string) => {
      if (from === channel) events.message(message);
    });
    // A server that accepts the connection but never answers (SIGSTOP) must not hold it.
    const giveUp = setTimeout(() => sub.disconnect(), SUBSCRIBER_OPEN_TIMEOUT_MS);
    try {
      await sub.connect();
      await sub.subscribe(channel);
    } catch (error) {
      sub.disconnect();
      throw error;
    } finally {
      clearTimeout(giveUp);
    }
    return { ping: () => sub.ping(), close: () => sub.disconnect() };
  }

  /** A new connection for the subscriber: a copy of the client's, or of the `attempt`-th Cluster node's. */
  private subscriber(attempt: number): Redis {
    if (!this.isCluster) return this.full.duplicate(SUBSCRIBER);
    const nodes = this.full.nodes?.('all') ?? [];
    const node = nodes[attempt % Math.max(1, nodes.length)];
    if (node === undefined) throw new Error('the Cluster has no node connected yet');
    return node.duplicate(SUBSCRIBER);
  }

  ownConnection(): OwnConnection {
    const client = this.full as Redis | Cluster;
    const own = client.isCluster
      ? (client as Cluster).duplicate(undefined, {
          enableOfflineQueue: false,
          enableAutoPipelining: true,
          redisOptions: { ...(client as Cluster).options.redisOptions, ...FAIL_FAST },
        })
      : (client as Redis).duplicate(FAIL_FAST);
    return ioredisConnection(own);
  }
}

/** An ioredis Redis or Cluster as ioredisConnection() reads it (the published types name no ioredis type). */
interface IoredisEvents {
  readonly status: string;
  once(event: 'ready', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  disconnect(): void;
}

/** The module's own ioredis connection from its `url` or `options` (ioredis is loaded by the caller). */
export function ioredisConnection(own: IoredisEvents): OwnConnection {
  return {
    client: own,
    ready: () =>
      new Promise<void>((resolve) => {
        if (own.status === 'ready') resolve();
        else own.once('ready', () => resolve());
      }),
    onError: (listener) => own.on('error', listener),
    close: () => own.disconnect(),
  };
}

/** The fail-fast options over the `options` of the module's own ioredis connection (ioredis RedisOptions). */
export const failFastOptions = (options: object | undefined): Record<string, unknown> => ({
  ...options,
  ...FAIL_FAST,
});
