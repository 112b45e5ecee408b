import type { FeedConnection, FeedEvents } from '../../store-changes.js';
import { withoutCredentials } from '../../store-description.js';
import {
  isNodeRedisCluster,
  isNodeRedisSentinel,
  type NodeRedisAny,
  type NodeRedisClientOptions,
  type NodeRedisCluster,
  type NodeRedisCommon,
  type NodeRedisSentinel,
  type NodeRedisSentinelOptions,
  type NodeRedisStandalone,
} from './node-redis-types.js';
import {
  CommandArrayDriver,
  type OwnConnection,
  reconnectDelayMs,
  type RedisDriver,
  type RedisNode,
  RedisReplyError,
  SUBSCRIBER_CONNECT_TIMEOUT_MS,
  SUBSCRIBER_OPEN_TIMEOUT_MS,
} from './redis-driver.js';

/**
 * The driver of a node-redis client, Cluster or Sentinel. Commands go through sendCommand, whose signature
 * differs for each; an error Redis answered with (node-redis' ErrorReply) becomes a RedisReplyError. Replies
 * need no decoding: node-redis gives integers as numbers, arrays as arrays and nil as null, with RESP2 and RESP3.
 */
export class NodeRedisDriver extends CommandArrayDriver implements RedisDriver {
  readonly isCluster: boolean;
  readonly address: string;
  readonly canSubscribe = true;
  private readonly send: (args: readonly string[], key?: string) => Promise<unknown>;

  constructor(private readonly client: NodeRedisAny) {
    super();
    if (isNodeRedisCluster(client)) {
      this.isCluster = true;
      this.address = clusterAddress(client);
      this.send = (args, key) => client.sendCommand(key, false, args).catch((error: unknown) => this.rediscover(error));
    } else if (isNodeRedisSentinel(client)) {
      this.isCluster = false;
      this.address = sentinelAddress(sentinelOptions(client));
      this.send = (args) => client.sendCommand(false, args);
    } else {
      this.isCluster = false;
      this.address = clientAddress(client.options);
      this.send = (args) => client.sendCommand(args);
    }
  }

  /**
   * A Cluster's map of slots read again after a command failed on a connection (at most once a second): redis 5
   * reads it only on MOVED or ASK, which never come from a master that is gone, so the slots of a master that
   * failed over would stay on its dead connection for ever. Rethrows the error.
   */
  private rediscover(error: unknown): never {
    const client = this.client as NodeRedisCluster;
    const now = performance.now();
    if (!isErrorReply(error) && now - this.rediscoveredAt >= 1000 && client._slots?.rediscover !== undefined) {
      this.rediscoveredAt = now;
      const [first] = client._options.rootNodes ?? [];
      client._slots.rediscover({ options: first ?? {} }).catch(() => undefined);
    }
    throw error;
  }

  private rediscoveredAt = -Infinity;

  command(args: readonly string[], key?: string): Promise<unknown> {
    return replied(this.send(args, key));
  }

  async masters(): Promise<RedisNode[]> {
    const client = this.client;
    if (!isNodeRedisCluster(client)) return [this];
    const nodes = await Promise.all(client.masters.map((node) => client.nodeClient(node)));
    return nodes.map((node) => ({ command: (args) => replied(node.sendCommand(args)) }));
  }

  async subscribe(attempt: number, channel: string, events: FeedEvents): Promise<FeedConnection> {
    const node = await this.nodeToSubscribeOn(attempt);
    // No reconnect, no queue: the feed makes a new connection itself, and must know when it does.
    const sub = node.duplicate({
      ...FRESH,
      disableOfflineQueue: true,
      socket: { ...node.options?.socket, reconnectStrategy: false, connectTimeout: SUBSCRIBER_CONNECT_TIMEOUT_MS },
    });
    return subscribed(sub, channel, events);
  }

  /** A client of the node the `attempt`-th subscriber connects to (the master, for a Sentinel). */
  private async nodeToSubscribeOn(attempt: number): Promise<NodeRedisStandalone> {
    const client = this.client;
    if (isNodeRedisSentinel(client)) return client._execute(false, async (master) => master);
    if (!isNodeRedisCluster(client)) return client;
    const nodes = client.masters;
    const node = nodes[attempt % Math.max(1, nodes.length)];
    if (node === undefined) throw new Error('the Cluster has no node connected yet');
    return client.nodeClient(node);
  }

  ownConnection(): OwnConnection {
    const client = this.client;
    let own: NodeRedisCommon;
    if (isNodeRedisCluster(client)) {
      const defaults = client._options.defaults;
      own = client.duplicate({ ...FRESH, defaults: failFast(defaults) });
    } else if (isNodeRedisSentinel(client)) {
      own = client.duplicate({ ...FRESH, nodeClientOptions: failFast(sentinelOptions(client)?.nodeClientOptions) });
    } else {
      own = client.duplicate({ ...FRESH, ...failFast(client.options) });
    }
    const errors: ((error: Error) => void)[] = [];
    // Without a listener, node-redis would throw its connection errors as unhandled.
    const report = (error: Error) => errors.forEach((listener) => listener(error));
    own.on('error', report);
    if (isNodeRedisCluster(client)) own.on('node-error', report);
    // It keeps trying in the background (reconnectStrategy); commands meanwhile fail at once.
    const connected = own.connect().then(() => undefined);
    connected.catch(() => undefined);
    return {
      client: own,
      ready: () => connected,
      onError: (listener) => errors.push(listener),
      close: () => destroy(own),
    };
  }
}

/**
 * Options that a connection of the module's does not take from the client it copies: the app's command
 * options (a typeMapping would change the replies' types).
 */
const FRESH = { commandOptions: undefined };

/** A client's options with the fail-fast ones over them: no offline queue, reconnecting in the background. */
function failFast(options: NodeRedisClientOptions | undefined): NodeRedisClientOptions {
  return {
    ...options,
    disableOfflineQueue: true,
    socket: { ...options?.socket, reconnectStrategy: (retries: number) => reconnectDelayMs(retries + 1) },
  };
}

/** Subscribes `sub`, a new connection (not connected yet), to `channel`, reporting to `events`. */
async function subscribed(sub: NodeRedisStandalone, channel: string, events: FeedEvents): Promise<FeedConnection> {
  let lastError: Error | undefined;
  sub.on('error', (error) => (lastError = error));
  sub.on('end', () => events.closed(lastError ?? new Error('the connection closed')));
  const close = () => destroy(sub);
  // A server that accepts the connection but never answers (SIGSTOP) must not hold it.
  const giveUp = setTimeout(close, SUBSCRIBER_OPEN_TIMEOUT_MS);
  try {
    await sub.connect();
    await sub.subscribe(channel, (message) => events.message(message));
  } catch (error) {
    close();
    throw error;
  } finally {
    clearTimeout(giveUp);
  }
  return { ping: () => replied(sub.sendCommand(['PING'])), close };
}

/** Closes a connection at once; one that is closed already is left as it is. */
function destroy(connection: NodeRedisCommon): void {
  if (!connection.isOpen) return;
  void Promise.resolve(connection.destroy()).catch(() => undefined);
}

/** A reply, or the error Redis answered with as a RedisReplyError (node-redis' ErrorReply has no name of its own). */
async function replied(reply: Promise<unknown>): Promise<unknown> {
  try {
    return await reply;
  } catch (error) {
    throw isErrorReply(error) ? new RedisReplyError((error as Error).message, { cause: error }) : error;
  }
}

/** Whether `error` is a node-redis ErrorReply (or one of its subclasses), found by its classes' names. */
function isErrorReply(error: unknown): boolean {
  for (let proto = error as object | null; proto !== null; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

/**
 * The options a Sentinel was made with: node-redis keeps them private, and duplicate() is the one method that
 * reads them. It is called on a stand-in whose class receives them instead of making a Sentinel.
 */
function sentinelOptions(sentinel: NodeRedisSentinel): NodeRedisSentinelOptions | undefined {
  let options: NodeRedisSentinelOptions | undefined;
  function Capture(given: NodeRedisSentinelOptions) {
    options = given;
  }
  const standIn = Object.assign(Object.create({ constructor: Capture }) as object, {
    _self: (sentinel as unknown as { _self: unknown })._self,
  });
  try {
    sentinel.duplicate.call(standIn);
  } catch {
    return undefined;
  }
  return options;
}

/** `Redis at host:port/db` of a node-redis client's options. */
function clientAddress(options: NodeRedisClientOptions | undefined): string {
  if (options?.url !== undefined) return `Redis at ${withoutCredentials(options.url)}`;
  const { host = 'localhost', port = 6379, path } = options?.socket ?? {};
  if (path !== undefined) return `Redis at ${path}`;
  return `Redis at ${host}:${port}${options?.database ? `/${options.database}` : ''}`;
}

function clusterAddress(cluster: NodeRedisCluster): string {
  const nodes = (cluster._options.rootNodes ?? []).map((node) =>
    node.url !== undefined
      ? withoutCredentials(node.url).replace(/^rediss?:\/\//, '')
      : `${node.socket?.host ?? 'localhost'}:${node.socket?.port ?? 6379}`,
  );
  if (nodes.length === 0) return 'a Redis Cluster';
  return `a Redis Cluster (${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''})`;
}

function sentinelAddress(options: NodeRedisSentinelOptions | undefined): string {
  const at = (options?.sentinelRootNodes ?? []).map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).join(', ');
  return `Redis master "${options?.name ?? '?'}" through the sentinels ${at}`;
}
