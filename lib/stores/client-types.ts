/**
 * The parts of an ioredis client and a pg Pool that the module uses. The published types name these, never a
 * type of ioredis or pg, which are optional peers: an app that installs neither compiles against the module's
 * `.d.ts` files, also without `skipLibCheck`. The real clients satisfy them as they are.
 */

/** An ioredis `Redis` or `Cluster`, as the Redis store sends its commands on it. */
export interface RedisClient {
  /** `true` for an ioredis `Cluster` (the store then makes one call per hash slot). */
  readonly isCluster: boolean;
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  evalsha(sha1: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  script(subcommand: 'LOAD', script: string): Promise<unknown>;
  ping(): Promise<unknown>;
}

/** An ioredis `Redis` or `Cluster` of the app's, whose settings the module's own connection copies. */
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

/** The commands of RedisClient, which a client must have for the Redis store to drive it. */
const REDIS_COMMANDS = ['call', 'evalsha', 'eval', 'script', 'ping'] as const;

/**
 * Refuses, at start, a Redis client the store cannot drive (such as a node-redis client, whose commands have
 * other names and shapes): every call would fail, and the fail modes would turn that into an outage for ever.
 * `where` names the option or argument, for the error.
 */
export function checkRedisClient(client: unknown, where: string): void {
  const c = (client ?? {}) as Record<string, unknown>;
  const missing = REDIS_COMMANDS.filter((command) => typeof c[command] !== 'function');
  if (missing.length === 0) return;
  const kind =
    typeof c.sendCommand === 'function' && typeof c.isOpen === 'boolean'
      ? 'a node-redis client (createClient() of the `redis` package)'
      : `${client === null || typeof client !== 'object' ? String(client) : `an instance of ${client.constructor?.name ?? 'Object'}`} (it has no ${missing.join(', ')})`;
  throw new TypeError(
    `nest-rate-limit: ${where} is ${kind}, which the module cannot drive: give an ioredis Redis or Cluster ` +
      "(new Redis(url) of the `ioredis` package), or `redis: { url }` for a connection of the module's own",
  );
}
