import type { FeedConnection, FeedEvents } from '../../store-changes.js';
import { DEFAULT_TIMEOUT_MS, RateLimitStoreTimeoutError } from '../../store-timeout.js';
import { send } from './glide-replies.js';
import { subscribeGlide } from './glide-subscriber.js';
import {
  type GlideAddress,
  type GlideClass,
  type GlideConfig,
  type GlideCommon,
  type GlideRoute,
  isGlideCluster,
  settingsOf,
} from './glide-types.js';
import {
  CommandArrayDriver,
  type OwnConnection,
  reconnectDelayMs,
  type RedisDriver,
  type RedisNode,
} from './redis-driver.js';

/** The module's own GLIDE clients (ownConnection()), and their `requestTimeout`: the module's `timeout`. */
const OWN_TIMEOUTS = new WeakMap<object, number>();

/**
 * The driver of a Valkey GLIDE GlideClient or GlideClusterClient. Every command is a customCommand, routed on a
 * Cluster to the primary of its key's slot (`primarySlotKey`), to a random node without a key; replies are
 * decoded as strings and shaped as ioredis gives them; an error the server answered with becomes a
 * RedisReplyError whose message is the server's again (GLIDE rewrites it: "An error was signalled by the server:
 * - NoScriptError: ..."). GLIDE's package is loaded only for a Cluster's subscriber (a GlideClient on one node);
 * everything else goes through the client given, or through its class.
 */
export class GlideDriver extends CommandArrayDriver implements RedisDriver {
  readonly isCluster: boolean;
  readonly address: string;
  /** Whether the client's configuration can be read, to make the subscriber's connection from it. */
  readonly canSubscribe: boolean;

  /**
   * On the module's own connection, whose `requestTimeout` is the module's `timeout`, the milliseconds of it:
   * GLIDE's TimeoutError is then the module's (a RateLimitStoreTimeoutError), whichever timer fired first.
   */
  private readonly timeoutMs: number | undefined;

  constructor(private readonly client: GlideCommon) {
    super();
    this.timeoutMs = OWN_TIMEOUTS.get(client);
    this.isCluster = isGlideCluster(client);
    this.address = glideAddress(client.config, this.isCluster);
    this.canSubscribe = Array.isArray(client.config?.addresses);
  }

  command(args: readonly string[], key?: string): Promise<unknown> {
    const route: GlideRoute | undefined = !this.isCluster
      ? undefined
      : key === undefined
        ? 'randomNode'
        : { type: 'primarySlotKey', key };
    const sent = send(this.client, args, route);
    if (this.timeoutMs === undefined) return sent;
    const timeoutMs = this.timeoutMs;
    return sent.catch((error: unknown) => {
      // GLIDE holds a request while it reconnects, so a server that is gone answers as a server that hangs.
      throw (error as Error)?.constructor?.name === 'TimeoutError' ? new RateLimitStoreTimeoutError(timeoutMs) : error;
    });
  }

  async masters(): Promise<RedisNode[]> {
    if (!this.isCluster) return [{ command: (args) => send(this.client, args, undefined) }];
    return (await this.primaries()).map((node) => ({
      command: (args) => send(this.client, args, { type: 'routeByAddress', ...node }),
    }));
  }

  /**
   * The Cluster's primaries, as GLIDE knows them: the nodes that answer an ECHO routed to all primaries (a command
   * without a policy of its own for the replies, which GLIDE gives per node, `[{ key: 'host:port', value }]`;
   * PING's would be merged into one PONG).
   */
  private async primaries(): Promise<Required<GlideAddress>[]> {
    const replies = await send(this.client, ['ECHO', 'nest-rate-limit'], 'allPrimaries', false);
    const addresses = Array.isArray(replies)
      ? replies.map((entry: unknown) => String((entry as { key?: unknown }).key))
      : Object.keys(replies as object);
    return addresses.map((address) => {
      const colon = address.lastIndexOf(':');
      return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
    });
  }

  /** The change feed's subscriber: a GlideClient of its own on the server (subscribeGlide, glide-subscriber.ts). */
  subscribe(attempt: number, channel: string, events: FeedEvents): Promise<FeedConnection> {
    return subscribeGlide(this.client, this.isCluster ? () => this.primaries() : undefined, attempt, channel, events);
  }

  /**
   * A client of the same class made from the given client's configuration, with fail-fast settings over it: it
   * connects lazily (the app starts while the server is down; ready() connects it, in the background until it
   * answers), a request waits at most the module's `timeout` (`requestTimeout`: GLIDE holds a request while it
   * reconnects, and would send it late), and a Cluster holds none while it recovers (`recoveryRequestsQueueSize`
   * 0). No pub/sub: the feed subscribes on connections of its own.
   */
  async ownConnection(settings: { timeoutMs?: number } = {}): Promise<OwnConnection> {
    const timeoutMs =
      Number.isSafeInteger(settings.timeoutMs) && (settings.timeoutMs ?? 0) >= 1
        ? (settings.timeoutMs as number)
        : DEFAULT_TIMEOUT_MS;
    const config: GlideConfig = {
      ...settingsOf(this.client),
      lazyConnect: true,
      requestTimeout: timeoutMs,
      pubsubSubscriptions: undefined,
      ...(this.isCluster && { recoveryRequestsQueueSize: 0 }),
    };
    const Client = this.client.constructor as unknown as GlideClass;
    const own = await Client.createClient(config);
    OWN_TIMEOUTS.set(own, timeoutMs);
    const errors: ((error: Error) => void)[] = [];
    let closed = false;
    // GLIDE has no connection events: ready() pings until it answers, and reports each failure.
    const connected = (async () => {
      for (let attempt = 1; !closed; attempt++) {
        try {
          await own.customCommand(['PING'], this.isCluster ? { route: 'randomNode' } : undefined);
          return;
        } catch (error) {
          if (closed) break;
          errors.forEach((listener) => listener(error as Error));
          await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs(attempt)).unref());
        }
      }
      throw new Error('the connection was closed');
    })();
    connected.catch(() => undefined);
    return {
      client: own,
      ready: () => connected,
      onError: (listener) => errors.push(listener),
      close: () => {
        closed = true;
        own.close();
      },
    };
  }
}

/** `Redis at host:port/db`, or `a Redis Cluster (host:port, …)`, of a GLIDE configuration (never credentials). */
function glideAddress(config: GlideConfig | undefined, cluster: boolean): string {
  const nodes = (config?.addresses ?? []).map((node) => `${node.host}:${node.port ?? 6379}`);
  if (cluster) {
    if (nodes.length === 0) return 'a Redis Cluster';
    return `a Redis Cluster (${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''})`;
  }
  if (nodes.length === 0) return 'Redis';
  const db = config?.databaseId ? `/${config.databaseId}` : '';
  return `Redis at ${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''}${db}`;
}
