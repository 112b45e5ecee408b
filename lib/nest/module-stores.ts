import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';

import type { Clock } from '../util/clock.js';
import { checkedSettings } from './limiter-settings.js';
import { importPeer } from '../util/optional-peer.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import type { RedisClient, RedisConnectionOptions } from '../stores/client-types.js';
import { MemoryRateLimitStore } from '../stores/memory/memory.store.js';
import { PostgresRateLimitStore } from '../stores/postgres/postgres.store.js';
import type { RateLimitStore } from '../stores/rate-limit-store.js';
import type { RateLimitStores } from '../stores/rate-limit-stores.js';
import { driverOf } from '../stores/redis/clients/driver-of.js';
import { failFastOptions, ioredisConnection } from '../stores/redis/clients/ioredis-driver.js';
import type { OwnConnection } from '../stores/redis/clients/redis-driver.js';
import { RedisRateLimitStore } from '../stores/redis/redis.store.js';
import { redisUrlArgument } from '../stores/redis/redis-url.js';
import { isDefect } from '../stores/store-defects.js';
import { postgresAddress } from '../stores/store-description.js';
import { checkOptionFields, fieldNames } from '../util/unknown-fields.js';

// The stores the module's options ask for (createStores): the limiter's own Redis connection, the PostgreSQL
// pool, or the in-memory store, each checked before it connects.

/**
 * Connection errors of the limiter's own connection go to the Nest logger, at most once per 5 s (the client
 * reconnects by itself); without a listener the client would report every one of them as unhandled.
 */
function reportConnectionErrors(connection: OwnConnection, where: string): void {
  const logger = new Logger('RateLimit');
  let lastMs = -Infinity;
  let held = 0;
  connection.onError((error: Error) => {
    const now = performance.now();
    if (now - lastMs < 5000) {
      held++;
      return;
    }
    const more = held > 0 ? ` (${held} more since the last report)` : '';
    logger.warn(
      `${where}: connection failed (${error.message}); until it answers, fail-open policies admit, ` +
        `fail-closed ones answer 503 and fail-local ones are decided in this process${more}`,
    );
    lastMs = now;
    held = 0;
  });
}

/** When the module's own connection of a Redis store can take commands. */
const connectionReady = new WeakMap<RateLimitStore, () => Promise<void>>();

/**
 * The client package of a store option (ioredis for `redis`, pg for `postgres`), loaded only when the option is
 * set: an app on the memory store needs not install it, and one that sets it without it is told what to install.
 */
async function loadClient<T>(name: 'ioredis' | 'pg', option: 'redis' | 'postgres'): Promise<T> {
  try {
    return await importPeer<T>(name);
  } catch (error) {
    throw new Error(`nest-rate-limit: the \`${option}\` option needs the ${name} package: npm install ${name}`, {
      cause: error,
    });
  }
}

async function createRedis(
  options: RateLimitModuleOptions,
  redisOptions: NonNullable<RateLimitModuleOptions['redis']>,
  clock: Clock,
) {
  checkRedisOption(redisOptions);
  const { url, client, options: connectionOptions } = redisOptions;
  let own: OwnConnection;
  if (client !== undefined) {
    // A connection of the module's own, made from the client given by its driver (the client is left alone).
    own = await driverOf(client, 'option redis.client').ownConnection({ timeoutMs: options.timeout });
  } else {
    const { Redis: RedisClient } = await loadClient<typeof import('ioredis')>('ioredis', 'redis');
    const fast = failFastOptions(connectionOptions);
    own = ioredisConnection(url === undefined ? new RedisClient(fast) : new RedisClient(redisUrlArgument(url), fast));
  }
  const store = new RedisRateLimitStore({
    client: own.client as RedisClient,
    clock: options.clock === 'store' ? 'store' : clock,
    keyPrefix: options.keyPrefix,
    identitySecret: options.identitySecret,
    readableKeys: options.readableKeys,
  });
  const where = driverOf(own.client, "the module's connection").address;
  reportConnectionErrors(own, where);
  connectionReady.set(store, own.ready);
  return { store, where, close: () => own.close() };
}

const POSTGRES_OPTIONS = fieldNames<NonNullable<RateLimitModuleOptions['postgres']>>({
  pool: true,
  connectionString: true,
  schema: true,
  migrate: true,
  ttlSlackMs: true,
  pruneIntervalMs: true,
  pruneBatch: true,
});
const REDIS_OPTIONS = fieldNames<NonNullable<RateLimitModuleOptions['redis']>>({
  url: true,
  client: true,
  options: true,
});

async function createPostgres(
  options: RateLimitModuleOptions,
  postgres: NonNullable<RateLimitModuleOptions['postgres']>,
  clock: Clock,
) {
  const { pool, connectionString, schema, migrate, ttlSlackMs, pruneIntervalMs, pruneBatch } = postgres;
  let own: Pool | undefined;
  if (pool === undefined) {
    if (connectionString === undefined) {
      throw new TypeError('nest-rate-limit: option "postgres" needs `pool` or `connectionString`');
    }
    const { default: pg } = await loadClient<{ default: { Pool: typeof Pool } }>('pg', 'postgres');
    // A query that gets no answer gives its connection back after a while instead of holding it for ever.
    own = new pg.Pool({ connectionString, connectionTimeoutMillis: 2000, query_timeout: 5000 });
    own.on('error', (error) => new Logger('RateLimit').warn(`PostgreSQL pool: ${error.message}`));
  }
  const store = new PostgresRateLimitStore({
    pool: pool ?? (own as Pool),
    schema,
    clock: options.clock === 'store' ? 'store' : clock,
    keyPrefix: options.keyPrefix,
    identitySecret: options.identitySecret,
    readableKeys: options.readableKeys,
    ttlSlackMs,
    pruneIntervalMs,
    pruneBatch,
    // A consume waits at most 10 timeouts for its statement (a bad `timeout` stops the start later).
    queueTimeoutMs:
      Number.isSafeInteger(options.timeout) && (options.timeout ?? 0) >= 1 ? 10 * (options.timeout ?? 0) : undefined,
  });
  if (migrate === true) await store.migrate();
  return {
    store,
    where: postgresAddress(pool ?? (own as Pool), connectionString, schema),
    close: async () => {
      await store.close();
      await own?.end();
    },
  };
}

/**
 * `identitySecret` and `readableKeys` shape the keys of the stores the module makes: beside a `store` of yours
 * (and no `postgres`) they would change nothing, so the start stops and says where they go. The message names
 * the options, never the secret's value.
 */
function checkStoreIdentityOptions(options: RateLimitModuleOptions): void {
  const given = (['identitySecret', 'readableKeys'] as const).filter((name) => options[name] !== undefined);
  if (given.length === 0) return;
  const [option, applies, it] = given.length > 1 ? ['options', 'apply', 'them'] : ['option', 'applies', 'it'];
  throw new TypeError(
    `nest-rate-limit: ${option} ${given.map((name) => `"${name}"`).join(' and ')} ${applies} to the stores the ` +
      `module makes, and \`store\` is one of yours: give ${it} to that store's options ` +
      `(e.g. new RedisRateLimitStore({ client, ${given.map((name) => `${name}: …`).join(', ')} }))`,
  );
}

export async function createStores(options: RateLimitModuleOptions, clock: Clock): Promise<RateLimitStores> {
  // every field of every option and the limiter's values, before anything connects
  checkedSettings(options);
  if (options.redis !== undefined) checkOptionFields(options.redis, REDIS_OPTIONS, 'redis');
  if (options.postgres !== undefined) checkOptionFields(options.postgres, POSTGRES_OPTIONS, 'postgres');
  const owned: { close(): Promise<unknown> | void }[] = [];
  const postgres = options.postgres === undefined ? undefined : await createPostgres(options, options.postgres, clock);
  if (postgres !== undefined) owned.push(postgres);
  let rates: RateLimitStore;
  let where: string;
  if (options.store !== undefined) {
    if (postgres === undefined) checkStoreIdentityOptions(options);
    rates = options.store;
    where = `the store given (${rates.constructor.name})`;
  } else if (options.redis !== undefined) {
    const redis = await createRedis(options, options.redis, clock);
    owned.push(redis);
    rates = redis.store;
    where = redis.where;
  } else if (postgres !== undefined) {
    rates = postgres.store;
    where = postgres.where;
  } else {
    where = 'memory (this process only)';
    new Logger('RateLimit').warn(
      'No `redis`, `postgres` or `store` option: using the in-memory store. Limits are per process, so N ' +
        'instances admit N times the limit; use Redis or PostgreSQL when you run more than one.',
    );
    rates = new MemoryRateLimitStore({
      clock,
      keyPrefix: options.keyPrefix,
      identitySecret: options.identitySecret,
      readableKeys: options.readableKeys,
    });
  }
  const quotas = postgres !== undefined && rates !== postgres.store ? `; quotas in ${postgres.where}` : '';
  new Logger('RateLimit').log(`Rate limits in ${where}${quotas}`);
  return { rates, quotas: postgres?.store ?? rates, owned };
}

/**
 * The module's own Redis connection fails fast while disconnected (no offline queue), so the first requests
 * would find it still connecting: wait for it, briefly, and load the script. A Redis that is down does not
 * stop the application; its policies apply their fail modes until it answers.
 */
export async function storesReady({ rates }: RateLimitStores): Promise<void> {
  if (!(rates instanceof RedisRateLimitStore)) return;
  // The module's own connection, or the client of a store of the app's: an ioredis one until it is ready (a
  // node-redis client is connected by the app before it makes the store).
  const client = rates.client as Partial<Pick<Redis, 'status' | 'once'>>;
  const connected =
    connectionReady.get(rates)?.() ??
    new Promise<void>((resolve) => {
      if (client.status === undefined || client.status === 'ready' || client.once === undefined) resolve();
      else client.once('ready', () => resolve());
    });
  const ready = new Promise<void>((resolve, reject) => {
    connected.then(resolve, reject);
    setTimeout(() => reject(new Error('Redis did not answer within 2 s')), 2000).unref();
  });
  try {
    await ready;
    await rates.load();
  } catch (error) {
    // A client that answers with a programming error is a defect to see now, not an outage to absorb.
    if (isDefect(error)) throw error;
    new Logger('RateLimit').warn(
      `Redis is not reachable yet (${(error as Error).message}); policies apply their fail modes until it is`,
    );
  }
}

/**
 * Refuses a `redis` option that names no server: `{ url: process.env.REDIS_URL }` with the variable unset
 * would otherwise connect to localhost:6379 without a word.
 */
export function checkRedisOption(redis: NonNullable<RateLimitModuleOptions['redis']>): void {
  const { url, client, options } = redis;
  if (client !== undefined) return;
  if (typeof url === 'string' && url.trim() !== '') {
    redisUrlArgument(url); // throws for a scheme ioredis would misread
    return;
  }
  if (options !== undefined && namesServer(options)) return;
  const given = options === undefined ? '' : ', and options name no host, port, path or sentinels';
  throw new TypeError(
    `nest-rate-limit: option "redis" names no server: url is ${url === '' ? 'empty' : String(url)}${given} ` +
      '(an environment variable that is not set? a misspelt option?). Give `url`, `client`, or `options` ' +
      'with host, port, path or sentinels, or leave `redis` out for the in-memory store.',
  );
}

/** Whether ioredis options say where the server is (else ioredis would take localhost:6379 without a word). */
function namesServer({ host, port, path, sentinels }: RedisConnectionOptions): boolean {
  const given = (value: unknown) => value !== undefined && value !== null && value !== '';
  return given(host) || given(port) || given(path) || (Array.isArray(sentinels) && sentinels.length > 0);
}
