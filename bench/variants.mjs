// The limiter variants of the benchmarks' apps (bench/app.mjs one per process, bench/paired-cpu.mjs several in
// one): each is the imports and providers of a Nest module with the one route of bench/hello.mjs. Limits are far
// above what the benchmarks send: they measure the limiter's overhead, not denials.
import 'reflect-metadata';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

// BENCH_DIST: another build of the library (an earlier version's dist/, measured beside this one)
const { MemoryRateLimitStore, RateLimitModule } = await import(
  new URL(`${process.env.BENCH_DIST ?? '../dist'}/index.js`, import.meta.url).href
);

const LIMIT = 1_000_000_000;
// GCRA holds a limit exactly only when its emission interval is a whole µs (validation refuses others):
// 60,000,000 a minute is one per µs, still far above what is sent.
const GCRA_LIMIT = 60_000_000;
const WINDOW_MS = 60_000;

/** The benchmark's users: the x-user header (`u123`), stored as `user:u123`. */
const byUser = (ctx) => {
  const user = ctx.switchToHttp().getRequest().headers['x-user'];
  return typeof user === 'string' ? `user:${user}` : undefined;
};
const perUser = { name: 'per-user', algorithm: 'sliding-window-counter', limit: LIMIT, window: '1m', key: byUser };
/** Three policies of one identity: the sliding window counter, a token bucket and GCRA. */
const threePolicies = [
  perUser,
  { name: 'burst', algorithm: 'token-bucket', limit: LIMIT, window: '1m', key: byUser },
  { name: 'smooth', algorithm: 'gcra', limit: GCRA_LIMIT, window: '1m', key: byUser },
];
const throttlerTracker = (req) => req.headers['x-user'] ?? req.ip;

/**
 * rate-limiter-flexible as a Nest guard: RateLimiterRedis.consume() per request, 429 when it rejects; at its
 * best: its ioredis client auto-pipelines.
 */
function flexibleGuard(limiter) {
  return class FlexibleGuard {
    async canActivate(ctx) {
      const req = ctx.switchToHttp().getRequest();
      try {
        await limiter.consume(req.headers['x-user'] ?? req.ip);
        return true;
      } catch (rejection) {
        if (rejection instanceof Error) throw rejection;
        ctx.switchToHttp().getResponse().status(429);
        return false;
      }
    }
  };
}

/**
 * The variants on the redis-server at `redisUrl` (and PostgreSQL at BENCH_PG_URL, schema BENCH_PG_SCHEMA):
 * name -> () => { imports, providers }. `onStoreError` counts this module's store failures.
 */
export function variantsOn(redisUrl, onStoreError) {
  // The store timeout is raised from its default (100 ms) to 2 s: a saturated app's event loop delays the
  // replies it reads, and past the timeout a fail-open policy lets requests through without deciding them,
  // which would measure something cheaper than the limiter. Store failures are counted and reported.
  const rateLimit = (options) => [RateLimitModule.forRoot({ timeout: 2000, onError: onStoreError, ...options })];
  const ours = (options) => ({ imports: rateLimit(options), providers: [] });
  const memory = (defaults) => ours({ store: new MemoryRateLimitStore(), defaults });
  const redis = (defaults) => ours({ redis: { url: redisUrl }, defaults });
  const postgres = (defaults) =>
    ours({
      postgres: { connectionString: process.env.BENCH_PG_URL, schema: process.env.BENCH_PG_SCHEMA, migrate: true },
      defaults,
    });
  const throttler = (options) => ({
    imports: [ThrottlerModule.forRoot(options)],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  });
  return {
    none: () => ({ imports: [], providers: [] }),
    // this module, in-memory store, one policy keyed by x-user (1,000 users)
    memory: () => memory([perUser]),
    // the same app; the load sends one x-user, so every request is on one key
    'memory-hot': () => memory([perUser]),
    // three policies of one identity in memory (sliding window counter, token bucket, GCRA)
    'memory-3': () => memory(threePolicies),
    // the same policy counting failed requests only: charged when decided, given back when the response ends
    // with a status below 400 (every one here), so each request is one consume and one refund
    'memory-failed': () => memory([{ ...perUser, count: 'failed' }]),
    // a concurrency limit keyed by x-user instead: a lease per request, given back when the response ends
    'memory-concurrency': () =>
      memory([{ name: 'in-flight', algorithm: 'concurrency', limit: LIMIT, window: '1m', key: byUser }]),
    // this module's default key ('user', falling back to the client IP): no user is known, so the global guard
    // leaves the policy to the interceptor; every request comes from 127.0.0.1, so it is one key
    'memory-ip': () => memory([{ name: 'per-user', algorithm: 'sliding-window-counter', limit: LIMIT, window: '1m' }]),
    // one policy on Redis: redis-1 is the sliding window counter
    'redis-1': () => redis([perUser]),
    'redis-fixed-window': () => redis([{ ...perUser, algorithm: 'fixed-window' }]),
    'redis-gcra': () => redis([{ ...perUser, algorithm: 'gcra', limit: GCRA_LIMIT }]),
    'redis-token-bucket': () => redis([{ ...perUser, algorithm: 'token-bucket' }]),
    'redis-3': () => redis(threePolicies),
    // this module on PostgreSQL (run.mjs made the schema; the first app creates the tables), 1 and 3 policies
    'postgres-1': () => postgres([perUser]),
    'postgres-3': () => postgres(threePolicies),
    // @nestjs/throttler, default in-memory storage, keyed by x-user like the variants above
    'throttler-memory': () =>
      throttler({ throttlers: [{ ttl: WINDOW_MS, limit: LIMIT }], getTracker: throttlerTracker }),
    // @nestjs/throttler exactly as configured by ThrottlerModule.forRoot([{ ttl, limit }]): keyed by client IP,
    // so one key here (every request comes from 127.0.0.1)
    'throttler-memory-hot': () => throttler([{ ttl: WINDOW_MS, limit: LIMIT }]),
    // @nestjs/throttler with @nest-lab/throttler-storage-redis on the same Redis, keyed by x-user; at its best:
    // its ioredis client auto-pipelines (the storage's own client, given these options), as this module's does
    'throttler-redis': () =>
      throttler({
        throttlers: [{ ttl: WINDOW_MS, limit: LIMIT }],
        getTracker: throttlerTracker,
        storage: new ThrottlerStorageRedisService(redisUrl, { enableAutoPipelining: true }),
      }),
    'flexible-redis': () => {
      const limiter = new RateLimiterRedis({
        storeClient: new Redis(redisUrl, { enableAutoPipelining: true }),
        points: LIMIT,
        duration: WINDOW_MS / 1000,
        keyPrefix: 'rlflx',
      });
      return { imports: [], providers: [{ provide: APP_GUARD, useClass: flexibleGuard(limiter) }] };
    },
  };
}
