import { importPeer } from '../../../util/optional-peer.js';
import type { FeedConnection, FeedEvents } from '../../store-changes.js';
import { send } from './glide-replies.js';
import {
  GLIDE_DECODER_STRING,
  GLIDE_PUBSUB_EXACT,
  type GlideAddress,
  type GlideClass,
  type GlideCommon,
  type GlideConfig,
  settingsOf,
} from './glide-types.js';
import { SUBSCRIBER_CONNECT_TIMEOUT_MS, SUBSCRIBER_OPEN_TIMEOUT_MS } from './redis-driver.js';

/**
 * A GlideClient of its own on `client`'s server (on a Cluster, whose `primaries` are given, the `attempt`-th
 * primary: Redis forwards a PUBLISH to every node), subscribed to `channel` as it connects. GLIDE reconnects and
 * subscribes again by itself, and says nothing: each ping asks for the connection's CLIENT ID, and another id
 * than the first means that the connection was lost (and messages with it), which the feed must know.
 */
export async function subscribeGlide(
  client: GlideCommon,
  primaries: (() => Promise<Required<GlideAddress>[]>) | undefined,
  attempt: number,
  channel: string,
  events: FeedEvents,
): Promise<FeedConnection> {
  let Client: GlideClass;
  let addresses: GlideAddress[] | undefined;
  if (primaries !== undefined) {
    ({ GlideClient: Client } = await importPeer<{ GlideClient: GlideClass }>('@valkey/valkey-glide'));
    const nodes = await primaries();
    const node = nodes[attempt % Math.max(1, nodes.length)];
    if (node === undefined) throw new Error('the Cluster has no primary connected yet');
    addresses = [node];
  } else {
    Client = client.constructor as unknown as GlideClass;
  }
  return openSubscriber(Client, subscriberConfig(client, addresses, channel, events), channel, events);
}

/**
 * The subscriber's configuration: `client`'s (on `addresses` when given, without what only a Cluster takes),
 * connecting at once within the subscriber's timeouts, on RESP3, subscribed to `channel`.
 */
function subscriberConfig(
  client: GlideCommon,
  addresses: GlideAddress[] | undefined,
  channel: string,
  events: FeedEvents,
): GlideConfig {
  return {
    ...withoutClusterOptions(settingsOf(client)),
    ...(addresses !== undefined && { addresses }),
    lazyConnect: false,
    requestTimeout: SUBSCRIBER_OPEN_TIMEOUT_MS,
    // GLIDE takes pub/sub on RESP3 only (its default).
    protocol: undefined,
    defaultDecoder: GLIDE_DECODER_STRING,
    advancedConfiguration: {
      ...settingsOf(client).advancedConfiguration,
      connectionTimeout: SUBSCRIBER_CONNECT_TIMEOUT_MS,
    },
    pubsubSubscriptions: {
      channelsAndPatterns: { [GLIDE_PUBSUB_EXACT]: new Set([channel]) },
      callback: (message) => {
        if (String(message.channel) === channel) events.message(String(message.message));
      },
    },
  };
}

/**
 * Connects the subscriber, given up (and closed, now or as it comes) when it is not subscribed within
 * SUBSCRIBER_OPEN_TIMEOUT_MS; its ping tells the feed when GLIDE connected again.
 */
async function openSubscriber(
  Client: GlideClass,
  config: GlideConfig,
  channel: string,
  events: FeedEvents,
): Promise<FeedConnection> {
  let closed = false;
  let sub: GlideCommon | undefined;
  const close = () => {
    closed = true;
    sub?.close();
  };
  // A server that accepts the connection but never answers (SIGSTOP) must not hold it.
  const giveUp = setTimeout(close, SUBSCRIBER_OPEN_TIMEOUT_MS);
  try {
    const made = Client.createClient(config);
    // given up before it came: closed as it comes
    made.then(
      (client) => closed && client.close(),
      () => undefined,
    );
    sub = await made;
    if (closed) throw new Error(`not subscribed within ${SUBSCRIBER_OPEN_TIMEOUT_MS} ms`);
    const id = await send(sub, ['CLIENT', 'ID'], undefined);
    await subscribedOn(sub, channel);
    const connection = sub;
    return {
      ping: async () => {
        const now = await send(connection, ['CLIENT', 'ID'], undefined);
        if (now !== id) {
          const lost = new Error('the connection was lost (GLIDE connected again, without telling)');
          events.closed(lost);
          throw lost;
        }
        return 'PONG';
      },
      close,
    };
  } catch (error) {
    close();
    throw error;
  } finally {
    clearTimeout(giveUp);
  }
}

/** A Cluster's configuration for a GlideClient on one of its nodes (without what only a Cluster takes). */
function withoutClusterOptions(config: GlideConfig): GlideConfig {
  const { periodicChecks: _checks, recoveryRequestsQueueSize: _queue, ...rest } = config;
  const { refreshTopologyFromInitialNodes: _refresh, ...advanced } = rest.advancedConfiguration ?? {};
  return { ...rest, advancedConfiguration: advanced };
}

/** Waits (briefly) until GLIDE reports `channel` as subscribed on the server, where it can tell. */
async function subscribedOn(sub: GlideCommon, channel: string): Promise<void> {
  if (sub.getSubscriptions === undefined) return;
  for (let tries = 0; tries < 20; tries++) {
    const state = await sub.getSubscriptions();
    const exact = state.actualSubscriptions?.[GLIDE_PUBSUB_EXACT];
    if (exact === undefined || [...exact].some((name) => String(name) === channel)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the subscription to ${channel} was not confirmed`);
}
