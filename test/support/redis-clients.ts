import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis';
import { Cluster as Ioredis5Cluster, Redis as Ioredis5 } from 'ioredis5';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { GlideClient, GlideClusterClient, Logger as GlideLogger } from '@valkey/valkey-glide';
import * as redis6 from 'redis';
import * as redis5 from 'redis5';

import type { NodeRedisClient, RedisConnection, ValkeyGlideClient } from '../../lib/stores/client-types.js';

/** A client of the app's, as a test gives it to the module or a store. */
export type AppRedisClient = RedisConnection | NodeRedisClient | ValkeyGlideClient;

/** A client made for a test: close() disconnects it (the server stays). */
export interface TestRedisClient {
  readonly client: AppRedisClient;
  close(): Promise<void>;
}

/** One Redis client package, as an app would make its clients: each a ready client (node-redis' connected). */
export interface RedisClientKind {
  readonly name: string;
  standalone(port: number): Promise<TestRedisClient>;
  /** A Cluster client, from the first nodes' ports. */
  cluster(ports: readonly number[]): Promise<TestRedisClient>;
  /**
   * A client of the master `name` through the sentinel on `port`; absent where the module cannot drive the
   * package's Sentinel client (redis 5's has no duplicate(): the module refuses it at start).
   */
  sentinel?(port: number, name: string): Promise<TestRedisClient>;
  /**
   * Whether its connection holds a request while it reconnects instead of failing it at once (GLIDE has no
   * setting for that): a server that is gone then looks like one that hangs, until the breaker opens.
   */
  readonly holdsWhileReconnecting?: boolean;
}

const LOOPBACK = '127.0.0.1';

/** An ioredis-style client (ioredis, or its fork iovalkey): `Redis` takes options, `Cluster` its nodes. */
interface IoredisPackage {
  Redis: new (options: object) => { disconnect(): void };
  Cluster: new (nodes: object[]) => { disconnect(): void };
}

function ioredisKind(name: string, { Redis, Cluster }: IoredisPackage): RedisClientKind {
  const made = (client: { disconnect(): void }): TestRedisClient => ({
    client: client as unknown as RedisConnection,
    close: async () => client.disconnect(),
  });
  return {
    name,
    standalone: async (port) => made(new Redis({ host: LOOPBACK, port })),
    cluster: async (ports) => made(new Cluster(ports.map((port) => ({ host: LOOPBACK, port })))),
    sentinel: async (port, master) => made(new Redis({ sentinels: [{ host: LOOPBACK, port }], name: master })),
  };
}

/** The `redis` package of one major (node-redis): its clients must be connected before they are used. */
function nodeRedisKind(
  name: string,
  redis: Pick<typeof redis6, 'createClient' | 'createCluster' | 'createSentinel'>,
  { sentinel = true } = {},
): RedisClientKind {
  const made = async (client: {
    connect(): Promise<unknown>;
    destroy(): unknown;
    on(event: 'error', listener: () => void): unknown;
  }): Promise<TestRedisClient> => {
    // The tests stop servers under it: its errors are expected, and node-redis throws them when unheard.
    client.on('error', () => undefined);
    await client.connect();
    return {
      client: client as unknown as NodeRedisClient,
      close: async () => {
        await Promise.resolve(client.destroy()).catch(() => undefined);
      },
    };
  };
  return {
    name,
    standalone: (port) => made(redis.createClient({ socket: { host: LOOPBACK, port } })),
    cluster: (ports) =>
      made(redis.createCluster({ rootNodes: ports.map((port) => ({ socket: { host: LOOPBACK, port } })) })),
    ...(sentinel && {
      sentinel: (port: number, master: string) =>
        made(redis.createSentinel({ name: master, sentinelRootNodes: [{ host: LOOPBACK, port }] })),
    }),
  };
}

/**
 * Valkey GLIDE: GlideClient and GlideClusterClient, connected by createClient(). GLIDE has no Sentinel client.
 * Its core logs each error reply it reads as a warning on stdout (the suites provoke NOSCRIPT on purpose):
 * errors only.
 */
function glideKind(): RedisClientKind {
  GlideLogger.setLoggerConfig('error');
  const made = (client: GlideClient | GlideClusterClient): TestRedisClient => ({
    client,
    close: async () => client.close(),
  });
  return {
    name: 'Valkey GLIDE',
    holdsWhileReconnecting: true,
    standalone: async (port) => made(await GlideClient.createClient({ addresses: [{ host: LOOPBACK, port }] })),
    cluster: async (ports) =>
      made(await GlideClusterClient.createClient({ addresses: ports.map((port) => ({ host: LOOPBACK, port })) })),
  };
}

/**
 * Every client package the module drives, in each major its peer ranges accept: ioredis 6 and 5, node-redis 6
 * and 5, iovalkey and Valkey GLIDE. The Redis suites run once per entry (`describe.each(REDIS_CLIENTS)`).
 */
export const REDIS_CLIENTS: readonly RedisClientKind[] = [
  ioredisKind('ioredis', { Redis: Ioredis, Cluster: IoredisCluster }),
  ioredisKind('ioredis 5', { Redis: Ioredis5, Cluster: Ioredis5Cluster }),
  nodeRedisKind('node-redis 6', redis6),
  // The major before: its factories' types differ from 6's only in type parameters the tests do not use.
  nodeRedisKind(
    'node-redis 5',
    redis5 as unknown as Pick<typeof redis6, 'createClient' | 'createCluster' | 'createSentinel'>,
    { sentinel: false },
  ),
  ioredisKind('iovalkey', { Redis: Iovalkey, Cluster: IovalkeyCluster }),
  glideKind(),
];

/** ioredis, the client the suites that run on one client use. */
export const IOREDIS = REDIS_CLIENTS[0] as RedisClientKind;
