import type { RateLimitModuleOptions } from '../../lib/index.js';
import { createTestSchema, type TestSchema } from './postgres.js';
import { startRedis, type TestRedis } from './redis-server.js';

/** The stores an HTTP test runs on (`describe.each(STORES)`). */
export const STORES = ['memory', 'redis', 'postgres'] as const;
export type StoreName = (typeof STORES)[number];

let prefixes = 0;

/** The servers the stores other than memory run on: the test's own Redis and PostgreSQL schema. */
export interface StoreServers {
  readonly redis: TestRedis;
  readonly db: TestSchema;
}

/**
 * A redis-server and a PostgreSQL schema of the spec's own, started before its tests (beside each other) and
 * stopped after them, for storeOptions() to name; read them in hooks and tests, not when the file loads.
 * @example const servers = storeServers(); … RateLimitModule.forRoot(storeOptions(store, servers))
 */
export function storeServers(): StoreServers {
  let started: StoreServers | undefined;
  beforeAll(async () => {
    const [redis, db] = await Promise.all([startRedis(), createTestSchema()]);
    started = { redis, db };
  });
  afterAll(async () => {
    await Promise.all([started?.redis.stop(), started?.db.drop()]);
  });
  const current = (): StoreServers => {
    if (started === undefined) throw new Error('storeServers: the servers are started in beforeAll');
    return started;
  };
  return {
    get redis() {
      return current().redis;
    },
    get db() {
      return current().db;
    },
  };
}

/**
 * The module's options for `store`, on the test's own Redis or PostgreSQL schema, under a key prefix no other
 * app of the run uses (so apps of one file never share state). The memory store needs nothing.
 * @example RateLimitModule.forRoot(storeOptions('redis', { redis }))
 */
export function storeOptions(
  store: StoreName,
  servers: { readonly redis?: Pick<TestRedis, 'url'>; readonly db?: TestSchema },
): RateLimitModuleOptions {
  const keyPrefix = `${store}${++prefixes}:`;
  if (store === 'redis') {
    if (servers.redis === undefined) throw new Error('storeOptions: the redis store needs the test Redis');
    return { redis: { url: servers.redis.url }, keyPrefix };
  }
  if (store === 'postgres') {
    if (servers.db === undefined) throw new Error('storeOptions: the postgres store needs a test schema');
    // A fresh app's first statements (prepared on new connections) can pass the default 100 ms on a loaded
    // machine: the fail mode would then decide, and a test of something else would count wrong. Tests of the
    // timeout itself set their own.
    return {
      postgres: { pool: servers.db.pool, schema: servers.db.schema, migrate: true },
      keyPrefix,
      timeout: 2000,
    };
  }
  return { keyPrefix };
}
