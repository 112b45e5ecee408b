import { Global, Inject, Logger, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Pool } from 'pg';

import { type Clock, systemClock } from './clock.js';
import { RATE_LIMIT_CLOCK } from './rate-limit.constants.js';
import { RateLimitExceptionFilter } from './rate-limit.exception.js';
import { GlobalRateLimitGuard, RateLimitGuard } from './rate-limit.guard.js';
import { GlobalRateLimitInterceptor, RateLimitInterceptor } from './rate-limit.interceptor.js';
import { ConfigurableRateLimitModule, RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import { RateLimitService } from './rate-limit.service.js';
import { RateLimiter } from './rate-limiter.js';
import { MemoryRateLimitStore } from './stores/memory/memory.store.js';
import { RateLimitStore } from './stores/rate-limit-store.js';
import { PostgresRateLimitStore } from './stores/postgres/postgres.store.js';
import { RedisRateLimitStore } from './stores/redis/redis.store.js';

/** Connections the module opened itself (a Redis client, a pg Pool), closed on shutdown. */
const owned = new WeakMap<RateLimitStore, { close(): Promise<unknown> | void }>();

/**
 * How the limiter's own connection behaves: a command fails at once while disconnected instead of waiting in
 * a queue, and nothing is replayed after a reconnect — a replayed consume would charge requests that were
 * already answered under the fail mode.
 */
const FAIL_FAST: RedisOptions = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  // Commands issued in the same tick go out in one write: many concurrent requests, few syscalls.
  enableAutoPipelining: true,
};

/**
 * Connection errors of the limiter's own connection go to the Nest logger, at most once per 5 s (ioredis
 * reconnects by itself); without a listener ioredis would print every one of them as unhandled.
 */
function reportConnectionErrors(redis: Redis | Cluster): void {
  const logger = new Logger('RateLimit');
  let lastMs = -Infinity;
  let held = 0;
  redis.on('error', (error: Error) => {
    const now = performance.now();
    if (now - lastMs < 5000) {
      held++;
      return;
    }
    logger.warn(`Redis connection: ${error.message}${held > 0 ? ` (${held} more since the last report)` : ''}`);
    lastMs = now;
    held = 0;
  });
}

/** A connection of the limiter's own with the settings of the caller's client; the caller's is left as it is. */
function dedicatedConnection(client: Redis | Cluster): Redis | Cluster {
  if (client instanceof Cluster) {
    return client.duplicate(undefined, {
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      redisOptions: { ...client.options.redisOptions, ...FAIL_FAST },
    });
  }
  return client.duplicate(FAIL_FAST);
}

async function createStore(options: RateLimitModuleOptions, clock: Clock): Promise<RateLimitStore> {
  if (options.store !== undefined) return options.store;
  const keyPrefix = options.keyPrefix;
  if (options.redis !== undefined) {
    const { url, client, options: redisOptions } = options.redis;
    const fast = { ...redisOptions, ...FAIL_FAST };
    const redis =
      client !== undefined ? dedicatedConnection(client) : url === undefined ? new Redis(fast) : new Redis(url, fast);
    reportConnectionErrors(redis);
    const store = new RedisRateLimitStore({
      client: redis,
      clock: options.clock === 'store' ? 'store' : clock,
      keyPrefix,
    });
    owned.set(store, { close: () => redis.disconnect() });
    return store;
  }
  if (options.postgres !== undefined) {
    const { pool, connectionString, schema, migrate } = options.postgres;
    let own: Pool | undefined;
    if (pool === undefined) {
      if (connectionString === undefined) {
        throw new TypeError('nestjs-rate-limit: option "postgres" needs `pool` or `connectionString`');
      }
      const { default: pg } = await import('pg');
      // A query that gets no answer gives its connection back after a while instead of holding it for ever.
      own = new pg.Pool({ connectionString, connectionTimeoutMillis: 2000, query_timeout: 5000 });
      own.on('error', (error) => new Logger('RateLimit').warn(`PostgreSQL pool: ${error.message}`));
    }
    const store = new PostgresRateLimitStore({
      pool: pool ?? (own as Pool),
      schema,
      clock: options.clock === 'store' ? 'store' : clock,
      keyPrefix,
    });
    if (migrate === true) await store.migrate();
    owned.set(store, {
      close: async () => {
        await store.close();
        await own?.end();
      },
    });
    return store;
  }
  new Logger('RateLimit').warn(
    'No `redis`, `postgres` or `store` option: using the in-memory store. Limits are per process, so N ' +
      'instances admit N times the limit; use Redis or PostgreSQL when you run more than one.',
  );
  return new MemoryRateLimitStore({ clock, keyPrefix });
}

/**
 * Rate limiting for a Nest application: registers the store (Redis when `redis` is given, else in memory),
 * RateLimitService, and the guard and interceptor as APP_GUARD / APP_INTERCEPTOR (inactive with
 * `global: false`). Global: RateLimitService can be injected anywhere.
 * @example RateLimitModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ redis: { url: c.get('REDIS_URL') } }) })
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: RATE_LIMIT_CLOCK, useValue: systemClock },
    { provide: RateLimitStore, useFactory: createStore, inject: [RATE_LIMIT_OPTIONS, RATE_LIMIT_CLOCK] },
    RateLimiter,
    RateLimitService,
    RateLimitGuard,
    RateLimitInterceptor,
    { provide: APP_GUARD, useClass: GlobalRateLimitGuard },
    { provide: APP_INTERCEPTOR, useClass: GlobalRateLimitInterceptor },
    { provide: APP_FILTER, useClass: RateLimitExceptionFilter },
  ],
  exports: [RateLimitService, RateLimitStore, RATE_LIMIT_CLOCK, RateLimiter, RateLimitGuard, RateLimitInterceptor],
})
export class RateLimitModule extends ConfigurableRateLimitModule implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(RateLimitStore) private readonly store: RateLimitStore) {
    super();
  }

  /**
   * The module's own connection fails fast while disconnected (no offline queue), so the first requests would
   * find it still connecting: wait for it, briefly, and load the script. A Redis that is down does not stop
   * the application; its policies apply their fail modes until it answers.
   */
  async onModuleInit(): Promise<void> {
    if (!(this.store instanceof RedisRateLimitStore) || !owned.has(this.store)) return;
    const store = this.store;
    const client = store.client;
    const ready = new Promise<void>((resolve, reject) => {
      if (client.status === 'ready') resolve();
      else client.once('ready', resolve);
      setTimeout(() => reject(new Error('Redis did not answer within 2 s')), 2000).unref();
    });
    try {
      await ready;
      await store.load();
    } catch (error) {
      new Logger('RateLimit').warn(
        `Redis is not reachable yet (${(error as Error).message}); policies apply their fail modes until it is`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    const connection = owned.get(this.store);
    if (connection !== undefined) {
      owned.delete(this.store);
      await connection.close();
    }
  }
}
