/**
 * The parts of a Redis client (ioredis, iovalkey, node-redis, Valkey GLIDE) and a pg Pool that the module uses. The published
 * types name these, never a type of ioredis, iovalkey, redis, @valkey/valkey-glide or pg, which are optional peers: an app that installs neither compiles against the module's
 * `.d.ts` files, also without `skipLibCheck`. The real clients satisfy them as they are.
 */

/** An ioredis (or iovalkey) `Redis` or `Cluster`, as the Redis store sends its commands on it. */
export interface RedisClient {
  /** `true` for an ioredis `Cluster` (the store then makes one call per hash slot). */
  readonly isCluster: boolean;
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  evalsha(sha1: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  script(subcommand: 'LOAD', script: string): Promise<unknown>;
  ping(): Promise<unknown>;
}

/**
 * A node-redis client, Cluster or Sentinel: createClient(), createCluster() or createSentinel() of the `redis`
 * package (v5 or v6), as the module tells it apart from an ioredis one.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  // Method syntax, whose parameters TypeScript compares both ways: node-redis' own, generic and different for
  // each of the three, are assignable.
  sendCommand(...args: never[]): Promise<unknown>;
  duplicate(...args: never[]): unknown;
}

/**
 * A Valkey GLIDE client: a `GlideClient` or `GlideClusterClient` of `@valkey/valkey-glide` (2.x), as the module
 * tells it apart from the others.
 */
export interface ValkeyGlideClient {
  // Method syntax, as for NodeRedisClient: GLIDE's own overloads are assignable.
  customCommand(...args: never[]): Promise<unknown>;
  invokeScript(...args: never[]): Promise<unknown>;
  close(...args: never[]): void;
}

/** An ioredis (or iovalkey) `Redis` or `Cluster` of the app's, whose settings the module's own connection copies. */
export interface RedisConnection extends RedisClient {
  readonly options: object;
  duplicate(): unknown;
}

/**
 * ioredis `RedisOptions` for the module's own connection: host, port, password, db, tls, sentinels, name and
 * every other option ioredis knows.
 */
export interface RedisConnectionOptions {
  // `| undefined` throughout: an ioredis RedisOptions must be assignable under exactOptionalPropertyTypes too.
  host?: string | undefined;
  port?: number | undefined;
  path?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  db?: number | undefined;
  sentinels?: RedisSentinelAddress[] | undefined;
  /** The Sentinel master's name. */
  name?: string | undefined;
  // `any`, not `unknown`: an ioredis RedisOptions (an interface, without an index signature) must be assignable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [option: string]: any;
}

/** A sentinel of ioredis' `sentinels` option. */
export interface RedisSentinelAddress {
  host?: string | undefined;
  port?: number | undefined;
  /** 4 or 6 */
  family?: number | undefined;
}

/** A `pg` query result, as far as the module reads it. */
export interface PgQueryResult {
  rows: unknown[];
}

/** A `pg` Pool or pooled client, as the PostgreSQL store queries it. */
export interface PgQueryable {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<PgQueryResult>;
  query(text: string, values?: unknown[]): Promise<PgQueryResult>;
}

/** A `pg` Pool. */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgQueryable & { release(error?: Error | boolean): void }>;
  /** The pool's settings (read for the start-up line that says where the limits are kept). */
  readonly options?: object;
}
