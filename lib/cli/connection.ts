import type { Pool } from 'pg';

import { maskedUrl, redisUrlArgument } from '../stores/redis/redis-url.js';
import type { EngineStore } from '../stores/engine-store.js';
import type { OverrideStorage } from '../stores/overrides.js';
import type { PolicyRecords } from '../stores/policy-records.js';
import { PostgresRateLimitStore } from '../stores/postgres/postgres.store.js';
import { RedisRateLimitStore } from '../stores/redis/redis.store.js';
import { CliError } from './cli-error.js';

/** How long connecting may take before the command gives up. */
const CONNECT_TIMEOUT_MS = 3000;

/** Where the command connects, as an app would (RateLimitModuleOptions): the store, its prefix and identities. */
export interface ConnectionSettings {
  readonly redis?: string;
  readonly postgres?: string;
  readonly schema?: string;
  readonly keyPrefix: string;
  readonly identitySecret?: string;
  readonly readableKeys: boolean;
}

/** A store the command drives, with what it keeps beyond state (the module's stores have both). */
export interface CliStore {
  readonly store: EngineStore & { readonly overrides: OverrideStorage; readonly policies: PolicyRecords };
  /** Where it is, for messages (never a password). */
  readonly address: string;
  close(): Promise<void>;
}

/** Resolves with `promise`, or rejects after `ms` with `message`. */
async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Imports an optional peer the command needs, or says which to install. */
async function peer<T>(name: 'ioredis' | 'pg', what: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch {
    throw new CliError(`${what} needs the package "${name}": npm install ${name}`);
  }
}

/** Connects to the store the settings name: exactly one of `redis` and `postgres`. */
export async function connect(settings: ConnectionSettings): Promise<CliStore> {
  const { redis, postgres } = settings;
  if ((redis === undefined) === (postgres === undefined)) {
    throw new CliError(
      'name one store: --redis <url> or --postgres <url> (or NEST_RATE_LIMIT_REDIS_URL / NEST_RATE_LIMIT_POSTGRES_URL)',
    );
  }
  const identities = { identitySecret: settings.identitySecret, readableKeys: settings.readableKeys };
  if (redis !== undefined) return connectRedis(redis, settings.keyPrefix, identities);
  return connectPostgres(postgres as string, settings.schema, settings.keyPrefix, identities);
}

async function connectRedis(
  url: string,
  keyPrefix: string,
  identities: { identitySecret?: string; readableKeys: boolean },
): Promise<CliStore> {
  const address = maskedUrl(url);
  let argument: string;
  try {
    argument = redisUrlArgument(url);
  } catch (error) {
    throw new CliError((error as Error).message.replace('option "redis.url"', '--redis'));
  }
  const { Redis } = await peer<typeof import('ioredis')>('ioredis', '--redis');
  const client = new Redis(argument, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // ioredis tells why it could not connect (ECONNREFUSED, a DNS failure) here, and rejects connect() vaguely.
  let reason: Error | undefined;
  client.on('error', (error: Error) => (reason ??= error));
  try {
    await within(client.connect(), CONNECT_TIMEOUT_MS, 'no answer');
  } catch (error) {
    client.disconnect();
    throw new CliError(`cannot reach Redis at ${address} (${(reason ?? (error as Error)).message})`);
  }
  const store = new RedisRateLimitStore({ client, keyPrefix, ...identities });
  return { store, address, close: async () => client.disconnect() };
}

async function connectPostgres(
  url: string,
  schema: string | undefined,
  keyPrefix: string,
  identities: { identitySecret?: string; readableKeys: boolean },
): Promise<CliStore> {
  const address = maskedUrl(url);
  const pg = await peer<{ default: { Pool: typeof Pool } }>('pg', '--postgres');
  const pool = new pg.default.Pool({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, max: 3 });
  pool.on('error', () => undefined);
  try {
    await within(pool.query('SELECT 1'), CONNECT_TIMEOUT_MS, 'no answer');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new CliError(`cannot reach PostgreSQL at ${address} (${(error as Error).message})`);
  }
  const store = new PostgresRateLimitStore({ pool, schema, keyPrefix, pruneIntervalMs: 0, ...identities });
  return { store, address, close: () => pool.end() };
}
