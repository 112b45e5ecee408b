// The parts of node-redis (the `redis` package, v5 and v6) that the driver uses, written here: the package is
// an optional peer, never imported. createClient() gives a NodeRedisStandalone, createCluster() a
// NodeRedisCluster, createSentinel() a NodeRedisSentinel.

/** What the three have in common. */
export interface NodeRedisCommon {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  duplicate(overrides?: object): NodeRedisCommon;
  connect(): Promise<unknown>;
  destroy(): unknown;
  on(event: string, listener: (error: Error) => void): unknown;
}

/** Socket options of a node-redis client, as far as the driver reads or sets them. */
export interface NodeRedisSocket {
  host?: string;
  port?: number;
  path?: string;
  reconnectStrategy?: false | number | ((retries: number) => number | false | Error);
  connectTimeout?: number;
}

/** Options of a node-redis client (or of a Cluster's or a Sentinel's nodes). */
export interface NodeRedisClientOptions {
  url?: string;
  socket?: NodeRedisSocket;
  database?: number;
  [option: string]: unknown;
}

/** createClient() */
export interface NodeRedisStandalone extends NodeRedisCommon {
  readonly options?: NodeRedisClientOptions;
  sendCommand(args: readonly string[]): Promise<unknown>;
  duplicate(overrides?: object): NodeRedisStandalone;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
}

/** A node of a Cluster, as `masters` lists it. */
export interface NodeRedisClusterNode {
  readonly host: string;
  readonly port: number;
}

/** createCluster() */
export interface NodeRedisCluster extends NodeRedisCommon {
  readonly _options: { rootNodes?: NodeRedisClientOptions[]; defaults?: NodeRedisClientOptions };
  readonly masters: readonly NodeRedisClusterNode[];
  /** Its map of slots, which rediscover() reads again from a node (`startWith`, else the root nodes). */
  readonly _slots?: { rediscover?(startWith: { options: NodeRedisClientOptions }): Promise<unknown> };
  nodeClient(node: NodeRedisClusterNode): NodeRedisStandalone | Promise<NodeRedisStandalone>;
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: readonly string[]): Promise<unknown>;
}

/** Options of createSentinel(). */
export interface NodeRedisSentinelOptions {
  name?: string;
  sentinelRootNodes?: { host?: string; port?: number }[];
  nodeClientOptions?: NodeRedisClientOptions;
  [option: string]: unknown;
}

/** createSentinel() */
export interface NodeRedisSentinel extends NodeRedisCommon {
  /** Runs `fn` with a client of the master's pool. */
  _execute<T>(isReadonly: boolean, fn: (client: NodeRedisStandalone) => Promise<T>): Promise<T>;
  getMasterNode(): unknown;
  sendCommand(isReadonly: boolean, args: readonly string[]): Promise<unknown>;
}

export type NodeRedisAny = NodeRedisStandalone | NodeRedisCluster | NodeRedisSentinel;

/** Whether `client` looks like a node-redis client, cluster or sentinel (no instanceof: `redis` is optional). */
export function isNodeRedis(client: object): client is NodeRedisAny {
  const c = client as Partial<Record<string, unknown>>;
  return typeof c.sendCommand === 'function' && typeof c.duplicate === 'function' && typeof c.isOpen === 'boolean';
}

export const isNodeRedisCluster = (client: NodeRedisAny): client is NodeRedisCluster =>
  typeof (client as Partial<NodeRedisCluster>).nodeClient === 'function';

export const isNodeRedisSentinel = (client: NodeRedisAny): client is NodeRedisSentinel =>
  typeof (client as Partial<NodeRedisSentinel>).getMasterNode === 'function' &&
  typeof (client as Partial<NodeRedisSentinel>)._execute === 'function';
