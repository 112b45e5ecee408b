import type { Redis } from 'ioredis';

import { MemoryRateLimitStore, PostgresRateLimitStore, RedisRateLimitStore } from '../../lib/index.js';
import type { RateLimitStore } from '../../lib/stores/rate-limit-store.js';
import type { Clock } from '../../lib/util/clock.js';
import { createTestSchema, type TestSchema } from '../support/postgres.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

/** What an operator does to the store behind the module's back: everything, or one key (row) of it. */
export type OperatorAction = 'flush' | 'delete-one';

/** One property run's store: each instance gets its own store object on the same state. */
export interface FuzzRun {
  /** A store for an instance whose clock is `clock` (the module takes it as `store`); close() it on shutdown. */
  storeFor(clock: Clock): { store: RateLimitStore; close(): Promise<void> };
  /** `redis-cli FLUSHALL` or `DEL` (a state table's TRUNCATE or DELETE): `pick` chooses the key. */
  operator?(action: OperatorAction, pick: number): Promise<void>;
  close(): Promise<void>;
}

/** A store the fuzzer drives two instances on. */
export interface FuzzBacking {
  readonly name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  open(): Promise<FuzzRun>;
}

let runs = 0;

/**
 * Memory: one MemoryRateLimitStore shared by both instances of the process (its only "shared backing": it has
 * none across processes), each call made on the clock of the instance that makes it. Nothing outside the module
 * reaches it, so memory runs without operator actions (and it has no cache of denials to go stale).
 */
export const memoryBacking: FuzzBacking = {
  name: 'memory',
  setup: async () => undefined,
  teardown: async () => undefined,
  open: async () => {
    let active: Clock | undefined;
    const clock: Clock = { now: () => (active as Clock).now() };
    let shared: MemoryRateLimitStore | undefined;
    const viewOn = (own: Clock): RateLimitStore => {
      active = own;
      // made when the first instance starts: the store reads its clock as it is made
      shared ??= new MemoryRateLimitStore({ clock, ttlSlackMs: 4 * 86_400_000 });
      return new Proxy(shared, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            active = own; // the store reads its clock first, synchronously
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    };
    return { storeFor: (own) => ({ store: viewOn(own), close: async () => undefined }), close: async () => undefined };
  },
};

/**
 * Redis: a redis-server of the spec's own; a key prefix per run, shared by the instances; a long TTL slack keeps
 * Redis' real-time expiry out of runs whose fake clocks stand still. The operator's client is a raw ioredis one.
 */
export function redisBacking(): FuzzBacking {
  let redis: TestRedis | undefined;
  // the instances' client (each instance's store on it) and the operator's, shared by the runs (stop() closes them)
  let client: Redis | undefined;
  let admin: Redis | undefined;
  return {
    name: 'redis',
    async setup() {
      redis = await startRedis();
      client = redis.client();
      admin = redis.client();
    },
    async teardown() {
      await redis?.stop();
    },
    async open() {
      const keyPrefix = `fz${++runs}:`;
      const operator = admin as Redis;
      return {
        storeFor: (clock) => ({
          store: new RedisRateLimitStore({ client: client as Redis, clock, keyPrefix, ttlSlackMs: 60_000 }),
          close: async () => undefined,
        }),
        async operator(action, pick) {
          if (action === 'flush') {
            await operator.flushall();
            return;
          }
          const keys = (await operator.keys(`${keyPrefix}*`)).sort();
          if (keys.length > 0) await operator.del(keys[pick % keys.length] as string);
        },
        close: async () => undefined,
      };
    },
  };
}

/** PostgreSQL: a schema of the spec's own; a key prefix per run; the operator TRUNCATEs or DELETEs a row. */
export function postgresBacking(): FuzzBacking {
  let schema: TestSchema | undefined;
  return {
    name: 'postgres',
    async setup() {
      schema = await createTestSchema();
      await new PostgresRateLimitStore({ pool: schema.pool, schema: schema.schema, pruneIntervalMs: 0 }).migrate();
    },
    async teardown() {
      await schema?.drop();
    },
    async open() {
      const { pool, schema: name } = schema as TestSchema;
      const keyPrefix = `fz${++runs}:`;
      const table = `"${name}".rate_limit_state`;
      return {
        storeFor: (clock) => {
          // rows expire on the instances' fake clocks: a long slack, as the conformance suite's
          const store = new PostgresRateLimitStore({
            pool,
            schema: name,
            clock,
            keyPrefix,
            ttlSlackMs: 2 * 3_600_000,
            pruneIntervalMs: 0,
          });
          return { store, close: () => store.close() };
        },
        async operator(action, pick) {
          if (action === 'flush') {
            await pool.query(`TRUNCATE ${table}`);
            return;
          }
          const { rows } = await pool.query<{ key: string }>(
            `SELECT key FROM ${table} WHERE starts_with(key, $1) ORDER BY key`,
            [keyPrefix],
          );
          const row = rows[pick % Math.max(1, rows.length)];
          if (row !== undefined) await pool.query(`DELETE FROM ${table} WHERE key = $1`, [row.key]);
        },
        close: async () => undefined,
      };
    },
  };
}
