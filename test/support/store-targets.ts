import { Redis } from 'ioredis';

import type { Clock } from '../../lib/util/clock.js';
import { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import type { EngineStore } from '../../lib/stores/engine-store.js';
import { PostgresRateLimitStore } from '../../lib/stores/postgres/postgres.store.js';
import { LUA_PROGRAM } from '../../lib/stores/redis/lua-program.js';
import { luaProgram } from '../../lib/stores/redis/rate-limit.lua.js';
import { RedisRateLimitStore, type RedisRateLimitStoreOptions } from '../../lib/stores/redis/redis.store.js';
import { createTestSchema, type TestSchema } from './postgres.js';
import { IOREDIS, type RedisClientKind, type TestRedisClient } from './redis-clients.js';
import { startCluster, type TestCluster } from './redis-cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

/** A store under test: made fresh (empty, own key space) for each property run. */
export interface StoreTarget {
  readonly name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  make(clock: Clock): EngineStore;
  /**
   * How long each key (row) the target's stores hold has left, in ms from `nowMs` (the stores' fake clock, for
   * a store that expires on it; Redis' PTTL, -1 for a key without expiry): for a target whose expiry a test
   * can see from outside the store.
   */
  expiries?(nowMs: number, policyId: string): Promise<number[]>;
}

let runs = 0;

export const memoryTarget: StoreTarget = {
  name: 'memory',
  setup: async () => undefined,
  teardown: async () => undefined,
  // Like the other targets' long TTL slack: a clock that steps back finds what the reference still counts.
  make: (clock) => new MemoryRateLimitStore({ clock, ttlSlackMs: 4 * 86_400_000 }),
};

/**
 * A Redis store on a redis-server of its own, through a client of `kind`'s package (ioredis unless said); with
 * `lean: false`, on the program without its lean path (lean.lua): every consume decided by the twins' path.
 */
export function redisTarget(
  kind: RedisClientKind = IOREDIS,
  { lean = true }: { lean?: boolean } = {},
): StoreTarget & { redis(): TestRedis } {
  let redis: TestRedis | undefined;
  let client: TestRedisClient | undefined;
  const program = lean ? {} : { [LUA_PROGRAM]: luaProgram({ lean: false }) };
  const name = kind === IOREDIS ? 'redis' : `redis (${kind.name})`;
  return {
    name: lean ? name : `${name}, twins' path only`,
    redis: () => redis as TestRedis,
    async setup() {
      redis = await startRedis();
      client = await kind.standalone(redis.port);
    },
    async teardown() {
      await client?.close();
      await redis?.stop();
    },
    async expiries(_nowMs, policyId) {
      const admin = new Redis({ port: (redis as TestRedis).port, lazyConnect: true });
      try {
        await admin.connect();
        const keys = await admin.keys(`*{${policyId}:*`);
        return await Promise.all(keys.map((key) => admin.pttl(key)));
      } finally {
        admin.disconnect();
      }
    },
    // A key prefix per run keeps runs apart; a long TTL slack keeps Redis' own (real-time) expiry out of
    // sequences whose fake clock stands still.
    make: (clock) =>
      new RedisRateLimitStore({
        client: (client as TestRedisClient).client,
        clock,
        keyPrefix: `t${++runs}:`,
        ttlSlackMs: 60_000,
        ...program,
      } as RedisRateLimitStoreOptions),
  };
}

/**
 * A Redis store on a 6-node Cluster, through a Cluster client of `kind`'s package: on a Cluster of its own, or
 * on `shared()`, one that the spec started (and stops) for several targets.
 */
export function clusterTarget(
  kind: RedisClientKind = IOREDIS,
  shared?: () => TestCluster,
): StoreTarget & { cluster(): TestCluster } {
  let cluster: TestCluster | undefined;
  let client: TestRedisClient | undefined;
  return {
    name: kind === IOREDIS ? 'redis-cluster' : `redis-cluster (${kind.name})`,
    cluster: () => cluster as TestCluster,
    async setup() {
      cluster = shared?.() ?? (await startCluster());
      client = await kind.cluster(cluster.ports.slice(0, 3));
    },
    async teardown() {
      await client?.close();
      if (shared === undefined) await cluster?.stop();
    },
    make: (clock) =>
      new RedisRateLimitStore({
        client: (client as TestRedisClient).client,
        clock,
        keyPrefix: `c${++runs}:`,
        ttlSlackMs: 60_000,
      }),
  };
}

export function postgresTarget(): StoreTarget & { schema(): TestSchema } {
  let schema: TestSchema | undefined;
  const stores: PostgresRateLimitStore[] = [];
  return {
    name: 'postgres',
    schema: () => schema as TestSchema,
    async setup() {
      schema = await createTestSchema();
      await new PostgresRateLimitStore({ pool: schema.pool, schema: schema.schema, pruneIntervalMs: 0 }).migrate();
    },
    async teardown() {
      await Promise.all(stores.map((store) => store.close()));
      await schema?.drop();
    },
    async expiries(nowMs, policyId) {
      const { pool, schema: name } = schema as TestSchema;
      const rows = await pool.query<{ expires_at: string }>(
        `SELECT expires_at FROM "${name}".rate_limit_state WHERE strpos(key, $1) > 0`,
        [`{${policyId}:`],
      );
      return rows.rows.map((row) => Number(row.expires_at) - nowMs);
    },
    make: (clock) => {
      const store = new PostgresRateLimitStore({
        pool: (schema as TestSchema).pool,
        schema: (schema as TestSchema).schema,
        clock,
        keyPrefix: `p${++runs}:`,
        // Rows expire on the store's (fake) clock: a sequence that steps back by up to an hour and forward again
        // must find what the reference still counts (a 1-minute slack lost a GCRA key: seed -1066478918).
        ttlSlackMs: 2 * 3_600_000,
        pruneIntervalMs: 0,
      });
      stores.push(store);
      return store;
    },
  };
}
