// One app of the HTTP benchmark: `node --import ./bench/peers.mjs bench/app.mjs <variant> <redisUrl>`.
// A Nest (Express) app with one JSON route, GET /hello -> {"hello":"world"}, and the rate limiter of the
// variant. Prints its port on stdout, serves until killed. Limits are far above what the benchmark sends:
// it measures the limiter's overhead, not denials. Started with an IPC channel, it answers the message
// 'stats' with { storeFailures }: the store failures this module reported (onError) so far.
import 'reflect-metadata';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

import { Hello } from './hello.mjs';

// BENCH_DIST: another build of the library (an earlier version's dist/, measured beside this one)
const { MemoryRateLimitStore, RateLimitModule } = await import(
  new URL(`${process.env.BENCH_DIST ?? '../dist'}/index.js`, import.meta.url).href
);

const [variant, redisUrl] = process.argv.slice(2);

for (const event of ['unhandledRejection', 'uncaughtException']) {
  process.on(event, (error) => {
    process.stderr.write(`${variant}: ${event}: ${error?.stack ?? error}\n`);
    process.exit(1);
  });
}

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
const throttlerTracker = (req) => req.headers['x-user'] ?? req.ip;

let storeFailures = 0;
process.on('message', (message) => {
  if (message === 'stats') process.send?.({ storeFailures });
});

// The store timeout is raised from its default (100 ms) to 2 s: a saturated app's event loop delays the
// replies it reads, and past the timeout a fail-open policy lets requests through without deciding them,
// which would measure something cheaper than the limiter. Store failures are counted and reported.
const rateLimit = (options) => [RateLimitModule.forRoot({ timeout: 2000, onError: () => storeFailures++, ...options })];
const throttler = (options) => [ThrottlerModule.forRoot(options)];
const postgres = () => ({
  connectionString: process.env.BENCH_PG_URL,
  schema: process.env.BENCH_PG_SCHEMA,
  migrate: true,
});
const throttlerGuard = [{ provide: APP_GUARD, useClass: ThrottlerGuard }];

/** imports and providers of each variant's module. */
const VARIANTS = {
  none: () => ({ imports: [], providers: [] }),
  // this module, in-memory store, one policy keyed by x-user (1,000 users)
  memory: () => ({ imports: rateLimit({ store: new MemoryRateLimitStore(), defaults: [perUser] }), providers: [] }),
  // the same app; the load sends one x-user, so every request is on one key
  'memory-hot': () => VARIANTS.memory(),
  // the same policy counting failed requests only: charged when decided, given back when the response ends
  // with a status below 400 (every one here), so each request is one consume and one refund
  'memory-failed': () => ({
    imports: rateLimit({ store: new MemoryRateLimitStore(), defaults: [{ ...perUser, count: 'failed' }] }),
    providers: [],
  }),
  // a concurrency limit keyed by x-user instead: a lease per request, given back when the response ends
  'memory-concurrency': () => ({
    imports: rateLimit({
      store: new MemoryRateLimitStore(),
      defaults: [{ name: 'in-flight', algorithm: 'concurrency', limit: LIMIT, window: '1m', key: byUser }],
    }),
    providers: [],
  }),
  // this module's default key ('user', falling back to the client IP): no user is known, so the global guard
  // leaves the policy to the interceptor; every request comes from 127.0.0.1, so it is one key
  'memory-ip': () => ({
    imports: rateLimit({
      store: new MemoryRateLimitStore(),
      defaults: [{ name: 'per-user', algorithm: 'sliding-window-counter', limit: LIMIT, window: '1m' }],
    }),
    providers: [],
  }),
  'redis-1': () => ({ imports: rateLimit({ redis: { url: redisUrl }, defaults: [perUser] }), providers: [] }),
  'redis-fixed-window': () => ({
    imports: rateLimit({ redis: { url: redisUrl }, defaults: [{ ...perUser, algorithm: 'fixed-window' }] }),
    providers: [],
  }),
  'redis-gcra': () => ({
    imports: rateLimit({ redis: { url: redisUrl }, defaults: [{ ...perUser, algorithm: 'gcra', limit: GCRA_LIMIT }] }),
    providers: [],
  }),
  'redis-3': () => ({
    imports: rateLimit({
      redis: { url: redisUrl },
      defaults: [
        perUser,
        { name: 'burst', algorithm: 'token-bucket', limit: LIMIT, window: '1m', key: byUser },
        { name: 'smooth', algorithm: 'gcra', limit: GCRA_LIMIT, window: '1m', key: byUser },
      ],
    }),
    providers: [],
  }),
  // this module on PostgreSQL (run.mjs made the schema; the first app creates the tables), 1 and 3 policies
  'postgres-1': () => ({ imports: rateLimit({ postgres: postgres(), defaults: [perUser] }), providers: [] }),
  'postgres-3': () => ({
    imports: rateLimit({
      postgres: postgres(),
      defaults: [
        perUser,
        { name: 'burst', algorithm: 'token-bucket', limit: LIMIT, window: '1m', key: byUser },
        { name: 'smooth', algorithm: 'gcra', limit: GCRA_LIMIT, window: '1m', key: byUser },
      ],
    }),
    providers: [],
  }),
  // @nestjs/throttler, default in-memory storage, keyed by x-user like the variants above
  'throttler-memory': () => ({
    imports: throttler({ throttlers: [{ ttl: WINDOW_MS, limit: LIMIT }], getTracker: throttlerTracker }),
    providers: throttlerGuard,
  }),
  // @nestjs/throttler exactly as configured by ThrottlerModule.forRoot([{ ttl, limit }]): keyed by client IP,
  // so one key here (every request comes from 127.0.0.1)
  'throttler-memory-hot': () => ({
    imports: throttler([{ ttl: WINDOW_MS, limit: LIMIT }]),
    providers: throttlerGuard,
  }),
  // @nestjs/throttler with @nest-lab/throttler-storage-redis on the same Redis, keyed by x-user; at its best:
  // its ioredis client auto-pipelines (the storage's own client, given these options), as this module's does
  'throttler-redis': () => ({
    imports: throttler({
      throttlers: [{ ttl: WINDOW_MS, limit: LIMIT }],
      getTracker: throttlerTracker,
      storage: new ThrottlerStorageRedisService(redisUrl, { enableAutoPipelining: true }),
    }),
    providers: throttlerGuard,
  }),
};

/**
 * rate-limiter-flexible as a Nest guard: RateLimiterRedis.consume() per request, 429 when it rejects; at its
 * best: its ioredis client auto-pipelines.
 */
class FlexibleGuard {
  static limiter;
  async canActivate(ctx) {
    const req = ctx.switchToHttp().getRequest();
    try {
      await FlexibleGuard.limiter.consume(req.headers['x-user'] ?? req.ip);
      return true;
    } catch (rejection) {
      if (rejection instanceof Error) throw rejection;
      const res = ctx.switchToHttp().getResponse();
      res.status(429);
      return false;
    }
  }
}
VARIANTS['flexible-redis'] = () => {
  FlexibleGuard.limiter = new RateLimiterRedis({
    storeClient: new Redis(redisUrl, { enableAutoPipelining: true }),
    points: LIMIT,
    duration: WINDOW_MS / 1000,
    keyPrefix: 'rlflx',
  });
  return { imports: [], providers: [{ provide: APP_GUARD, useClass: FlexibleGuard }] };
};

if (!(variant in VARIANTS)) {
  process.stderr.write(`unknown variant ${variant}; one of ${Object.keys(VARIANTS).join(', ')}\n`);
  process.exit(2);
}

class BenchModule {}
const AppModule = Reflect.decorate([Module({ ...VARIANTS[variant](), controllers: [Hello] })], BenchModule);

const app = await NestFactory.create(AppModule, { logger: ['error'] });
if (process.env.BENCH_INJECT !== undefined) {
  // In-process mode (bench/in-process.mjs): no socket, requests injected into the Express app.
  const { injectRequests } = await import('./inject.mjs');
  await app.init();
  const result = await injectRequests(app.getHttpAdapter().getInstance(), process.env.BENCH_INJECT);
  process.stdout.write(`${JSON.stringify({ variant, ...result, storeFailures })}\n`);
  await app.close();
  process.exit(0);
}
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
process.stdout.write(`${app.getHttpServer().address().port}\n`);
