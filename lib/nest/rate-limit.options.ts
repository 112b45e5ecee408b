import type { ExecutionContext } from '@nestjs/common';

import type { TrustProxy } from '../keys/client-ip.js';
import type { RateLimitDecisionEvent } from '../limiter/decision-events.js';
import type {
  FailMode,
  RateLimitListEntry,
  RateLimitMode,
  RateLimitPolicy,
  RateLimitKey,
} from '../policy/policy.types.js';
import type { RateLimitErrors } from '../responses/rate-limit-exceptions.js';
import type { RateLimitHeaders } from '../responses/rate-limit-headers.js';
import type { RateLimitSheddingOptions } from '../shedding/shedding-options.js';
import type { RateLimitStore } from '../stores/rate-limit-store.js';
import type {
  NodeRedisClient,
  PgPool,
  RedisConnection,
  RedisConnectionOptions,
  ValkeyGlideClient,
} from '../stores/client-types.js';

/**
 * Options of RateLimitModule.forRoot / forRootAsync.
 * @example RateLimitModule.forRoot({ redis: { url: 'redis://localhost:6379' }, defaults: [{ algorithm: 'sliding-window-counter', limit: 600, window: '1m' }] })
 */
export interface RateLimitModuleOptions {
  /**
   * Redis connection; absent means the in-memory store (limits per process, with one startup warning). The
   * limiter opens a connection of its own: from `url` (e.g. 'redis://:password@host:6379/0') and/or ioredis
   * `options` (host, port, sentinels...), or a duplicate of your `client` (ioredis, iovalkey, node-redis or Valkey GLIDE),
   * which stays as it was. A `redis` option that names no server (an unset REDIS_URL; `options` without host, port, path or
   * sentinels) stops the start.
   */
  redis?: {
    /**
     * A Redis URL: redis:// or rediss://, a bare host:port, or a Unix socket (unix:///path/to/redis.sock or
     * /path/to/redis.sock). Another scheme (http://, reddis://) stops the start.
     */
    url?: string;
    /**
     * An ioredis or iovalkey Redis or Cluster, a node-redis client, Cluster or Sentinel (createClient(),
     * createCluster(), createSentinel() of the `redis` package), or a Valkey GLIDE GlideClient or
     * GlideClusterClient, whose settings the limiter's own connection copies.
     */
    client?: RedisConnection | NodeRedisClient | ValkeyGlideClient;
    /** ioredis options of the limiter's connection (the module sets its fail-fast options over them). */
    options?: RedisConnectionOptions;
  };
  /**
   * PostgreSQL (the `pg` package): a Pool of yours, or a connection string for a pool of the module's own.
   * Rate-limit policies use it when `redis` is not set; `migrate: true` creates the schema at start (safe from
   * many instances at once). `ttlSlackMs`, `pruneIntervalMs` and `pruneBatch` go to PostgresRateLimitStore.
   */
  postgres?: {
    /** A `pg` Pool of yours; the module never closes it. */
    pool?: PgPool;
    /** A connection string for a pool of the module's own (closed on shutdown). */
    connectionString?: string;
    /** The schema of the module's tables and functions; default 'public'. */
    schema?: string;
    /** Create or upgrade the schema at start, under an advisory lock (safe from every instance at once). */
    migrate?: boolean;
    /** Milliseconds kept past a row's reset, a tolerance for clock differences between instances; default 1000. */
    ttlSlackMs?: number;
    /** How often expired rows are deleted, in ms; default 60,000, 0 turns pruning off. */
    pruneIntervalMs?: number;
    /** Most rows one pruning statement deletes; default 1000. */
    pruneBatch?: number;
  };
  /** A store of your own, implementing RateLimitStore (docs/stores.md, "Writing a store"); wins over `redis`. */
  store?: RateLimitStore;
  /** Policies applied to every route unless skipped. */
  defaults?: RateLimitPolicy[];
  /**
   * Default true: the guard acts on every route (APP_GUARD) and the limiter attaches its interceptor where
   * user-keyed policies must wait for a route's own guards. False: both are yours to place.
   */
  global?: boolean;
  /** Default 'ietf'. */
  headers?: RateLimitHeaders;
  /**
   * Default 'nest'. 'problem': HTTP 429 and 503 bodies are RFC 9457 problem details
   * (`application/problem+json`, types `…#quota-exceeded` and `…#temporary-reduced-capacity`, the member
   * `violated-policies`). The 403 of a deny list, GraphQL, WebSocket and microservice errors keep their shapes.
   * @example errors: 'problem'
   */
  errors?: RateLimitErrors;
  /** Default false: the socket address is the client. */
  trustProxy?: TrustProxy;
  /** Default 64: IPv6 clients are keyed by this prefix length. */
  ipv6Prefix?: number;
  /**
   * Default 'open'; a policy's own failMode wins. 'local': while the store fails, decide in this process on
   * each policy's `localLimit` (default `ceil(limit / instances)`), then on the store again once it answers.
   */
  failMode?: FailMode;
  /**
   * How many app instances share the store, an integer >= 1; default 1. Under `failMode: 'local'`, a policy
   * without its own `localLimit` gets `ceil(limit / instances)` per instance while the store fails.
   * @example RateLimitModule.forRoot({ redis: { url }, failMode: 'local', instances: 4 })
   */
  instances?: number;
  /**
   * Default 'enforce'; a policy's own mode wins. 'shadow' decides and reports every policy without denying:
   * would-be denials are logged (once per policy per minute) and passed to `onDecision`.
   */
  mode?: RateLimitMode;
  /**
   * Called for every decided policy of every request and RateLimitService call, synchronously and never
   * awaited (keep it cheap: count, sample, enqueue). A hook that throws is logged; the request goes on.
   * @example onDecision: (e) => { if (!e.allowed) deniedCounter.add(1, { policy: e.policy, shadow: e.shadow }); }
   */
  onDecision?: (event: RateLimitDecisionEvent) => void;
  /** Milliseconds per store call, default 100; past it the call counts as a store failure. */
  timeout?: number;
  /**
   * How long, in ms, a denial of a shared store (Redis, PostgreSQL) answers the same key's next requests in this
   * process without asking the store again; default 1000, 0 asks every time. Changes made through
   * RateLimitService reach every instance's cache at once; this bounds how long a change made outside the module
   * (`redis-cli DEL` or `FLUSHALL`, a restored backup) goes unseen. Never longer than the denial's own wait.
   * @example denyCacheMs: 250
   */
  denyCacheMs?: number;
  /**
   * The key of every policy that names none (`'ip'`, `'user'` or a function of the request, as a policy's `key`);
   * default `'user'`, which counts an anonymous request by its client IP. One line ports a @nestjs/throttler
   * `getTracker`.
   * @example key: (ctx) => ctx.switchToHttp().getRequest().headers['x-api-key']
   */
  key?: RateLimitKey;
  /** Default 'rl:'. */
  keyPrefix?: string;
  /**
   * The secret of the keyed hash (HMAC-SHA-256) that store keys hold in place of identities, at least 16
   * characters, the same on every instance (from your secrets manager; changing it starts every key afresh).
   * Default: a constant of the module's with `keyPrefix`, so that every instance and restart agrees. Either way
   * no identity (an API key) is readable in Redis or PostgreSQL; with a secret of your own, one that can be
   * guessed (an email, an IP) cannot be found from its key by trying candidates either.
   * @example identitySecret: process.env.RATE_LIMIT_SECRET
   */
  identitySecret?: string;
  /**
   * Default false: every identity is stored as its keyed hash, 16 characters (`rl:{api:iYhn8GvZ46EnzdjK}`), the
   * built-in `'ip'` and `'user'` ones too. True: identities of up to 64 letters, digits and `._:@/+=-` are stored
   * as they are (`rl:{api:user:42}`), for teams who read their keyspace; others are still hashed (marked `#`).
   * Never true where a key function returns a secret.
   */
  readableKeys?: boolean;
  /** Default 'local'; 'store' takes time from the store (Redis TIME) as the one clock of every instance. */
  clock?: 'local' | 'store';
  /** The authenticated user's id; default `req.user?.id ?? req.user?.sub`. */
  user?: (ctx: ExecutionContext) => string | undefined;
  /** Called on every store failure (the alerting hook), with the policy's name. */
  onError?: (error: Error, policy: string) => void;
  /**
   * Requests no policy applies to (nothing is consumed): client addresses, CIDR ranges or functions of the
   * request. Checked wherever at least one policy would run, after every deny list.
   */
  allow?: readonly RateLimitListEntry[];
  /** Requests refused with 403 (`RATE_LIMIT_DENY_LIST`, and its equivalent in other contexts) wherever a policy would run. */
  deny?: readonly RateLimitListEntry[];
  /**
   * Load shedding (off unless given): an adaptive concurrency limit for the handlers the module guards, learned
   * from their latency, and the event loop's delay watched; `sheddable` requests are refused first, `default`
   * ones next, and a reserve of the limit is kept for `critical` ones (`@Criticality`). A refused request gets
   * 503 with `Retry-After` and `code: 'OVERLOADED'`. `true` takes every default. See docs/shedding-load.md.
   * @example shedding: { minLimit: 8, maxLimit: 500, reserve: 0.25, maxEventLoopDelay: '150ms' }
   */
  shedding?: boolean | RateLimitSheddingOptions;
}

export type { RateLimitErrors, RateLimitHeaders, RateLimitSheddingOptions, TrustProxy };
