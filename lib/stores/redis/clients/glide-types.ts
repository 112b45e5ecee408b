// The parts of Valkey GLIDE (@valkey/valkey-glide 2.x) that the driver uses, written here, and what it reads of a
// client (its kind, its configuration): the package is an optional peer, never imported for its types. GlideClient.createClient() gives a GlideStandalone,
// GlideClusterClient.createClient() a GlideCluster.

/** A node as GLIDE's configuration lists it. */
export interface GlideAddress {
  host: string;
  port?: number;
}

/**
 * A GLIDE client's configuration (GlideClientConfiguration, GlideClusterClientConfiguration), as far as the driver
 * reads or sets it; the rest (credentials, TLS, backoff...) is copied as it is.
 */
export interface GlideConfig {
  addresses?: GlideAddress[];
  databaseId?: number;
  useTLS?: boolean;
  requestTimeout?: number;
  lazyConnect?: boolean;
  protocol?: unknown;
  defaultDecoder?: number;
  pubsubSubscriptions?: {
    channelsAndPatterns: Partial<Record<number, Set<string>>>;
    callback?: (message: { message: unknown; channel: unknown }) => void;
  };
  advancedConfiguration?: { connectionTimeout?: number; [option: string]: unknown };
  /** GlideClusterClient only: requests held while the client reconnects (0: none, they fail at once). */
  recoveryRequestsQueueSize?: number;
  [option: string]: unknown;
}

/** Where a GLIDE command goes on a Cluster (its `route` option). */
export type GlideRoute =
  | 'randomNode'
  | 'allPrimaries'
  | { type: 'primarySlotKey'; key: string }
  | { type: 'routeByAddress'; host: string; port?: number };

/** What both clients have. */
export interface GlideCommon {
  customCommand(args: string[], options?: { route?: GlideRoute; decoder?: number }): Promise<unknown>;
  close(message?: string): void;
  /** The configuration it was made with: a private field of BaseClient in 2.x, read where it is there. */
  readonly config?: GlideConfig;
  getSubscriptions?(): Promise<{ actualSubscriptions?: Partial<Record<number, Set<unknown>>> }>;
}

/** A client class of GLIDE's: its static factory, which connects (or not, with `lazyConnect`). */
export interface GlideClass {
  readonly name: string;
  createClient(config: GlideConfig): Promise<GlideCommon>;
}

/** Decoder.String: replies as strings, whatever `defaultDecoder` the app gave its client. */
export const GLIDE_DECODER_STRING = 1;
/** GlideClientConfiguration.PubSubChannelModes.Exact */
export const GLIDE_PUBSUB_EXACT = 0;

/**
 * Whether `client` looks like a GLIDE client (GlideClient or GlideClusterClient): no instanceof, the package is
 * an optional peer. Both have customCommand and invokeScript, which no other client package has.
 */
export function isGlide(client: object): client is GlideCommon {
  const c = client as Partial<Record<string, unknown>>;
  return typeof c.customCommand === 'function' && typeof c.invokeScript === 'function';
}

/** A GlideClusterClient: the one of the two with commands that take a route (fcallWithRoute, ...). */
export const isGlideCluster = (client: GlideCommon): boolean =>
  typeof (client as unknown as Partial<Record<string, unknown>>).invokeScriptWithRoute === 'function';

/**
 * The configuration a GLIDE client was made with, to make another like it. GLIDE 2.x keeps it in a private
 * field; a client without it cannot be copied, and the start stops rather than connect without its settings
 * (credentials, TLS, database).
 */
export function settingsOf(client: GlideCommon): GlideConfig {
  const config = client.config;
  if (typeof config !== 'object' || config === null || !Array.isArray(config.addresses)) {
    throw new TypeError(
      `nest-rate-limit: the ${client.constructor?.name ?? 'GLIDE client'} given keeps no configuration the module ` +
        'can read (the `config` field of @valkey/valkey-glide 2.x), so it cannot make a connection of its own ' +
        'from it: give `redis: { url }` (or an ioredis or iovalkey client) for the same endpoint',
    );
  }
  return config;
}
