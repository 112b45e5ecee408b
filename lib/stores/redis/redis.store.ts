import type { Cluster, Redis } from 'ioredis';

import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { type Clock, systemClock } from '../../clock.js';
import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import { toDecision } from '../engine.js';
import type { RateLimitStore, RateLimitStoreItem } from '../rate-limit-store.js';
import { checkKeyPrefix, storageKey } from '../storage-key.js';
import { NEVER, RATE_LIMIT_SCRIPT, RATE_LIMIT_SCRIPT_SHA } from './rate-limit.lua.js';

/** Options of the Redis store. */
export interface RedisRateLimitStoreOptions {
  /** An ioredis `Redis` or `Cluster`. The store never changes it, and never closes it. */
  client: Redis | Cluster;
  /** Time source, or 'store' to read Redis `TIME` inside the script (one clock for every instance). */
  clock?: Clock | 'store';
  /** Default 'rl:'. */
  keyPrefix?: string;
  /** Milliseconds added to every key's TTL, a tolerance for clock differences between instances; default 1000. */
  ttlSlackMs?: number;
}

type Operation = 'consume' | 'peek' | 'refund' | 'reset';
type Item = Pick<RateLimitStoreItem, 'policy' | 'key'> & { cost?: number };

/**
 * The production store: state in Redis, shared by every process. Each operation is ONE EVALSHA of one Lua
 * script, whatever the number of policies, and a consume writes only when every policy allows it.
 * @example new RedisRateLimitStore({ client: new Redis(process.env.REDIS_URL) })
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly client: Redis | Cluster;
  private readonly clock: Clock | undefined;
  private readonly keyPrefix: string;
  private readonly ttlSlack: string;

  constructor(options: RedisRateLimitStoreOptions) {
    if (options?.client === undefined) {
      throw new TypeError('nestjs-rate-limit: RedisRateLimitStore needs `client`, an ioredis Redis or Cluster');
    }
    this.client = options.client;
    this.clock = options.clock === 'store' ? undefined : (options.clock ?? systemClock);
    this.keyPrefix = checkKeyPrefix(options.keyPrefix ?? 'rl:');
    const slack = options.ttlSlackMs ?? 1000;
    if (!Number.isSafeInteger(slack) || slack < 0) {
      throw new TypeError(`nestjs-rate-limit: ttlSlackMs must be an integer >= 0, got ${slack}`);
    }
    this.ttlSlack = String(slack);
  }

  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.decide('consume', items);
  }

  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return this.decide('peek', items);
  }

  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.decide('refund', items);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    if (items.length > 0) await this.run('reset', items);
  }

  ping(): Promise<unknown> {
    return this.client.ping();
  }

  /** Loads the script into Redis ahead of the first request (it is also loaded on demand). */
  async load(): Promise<void> {
    await this.client.script('LOAD', RATE_LIMIT_SCRIPT);
  }

  private async decide(op: Operation, items: readonly Item[]): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    const reply = await this.run(op, items);
    return items.map(({ policy, cost = 0 }, i) => decisionOf(policy, reply, i * 4, op === 'consume' ? cost : 1));
  }

  private async run(op: Operation, items: readonly Item[]): Promise<unknown> {
    const keys: string[] = [];
    const args: string[] = [op, this.clock === undefined ? '' : String(this.clock.now()), this.ttlSlack];
    for (const { policy, key, cost = 0 } of items) {
      keys.push(storageKey(this.keyPrefix, policy.id, key));
      args.push(
        String(ALGORITHM_CODES[policy.algorithm]),
        String(policy.limit),
        String(policy.windowMs),
        String(policy.capacity),
        String(cost),
      );
    }
    try {
      return await this.client.evalsha(RATE_LIMIT_SCRIPT_SHA, keys.length, ...keys, ...args);
    } catch (error) {
      // Redis restarted or its script cache was flushed: EVAL sends the script and caches it again.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(RATE_LIMIT_SCRIPT, keys.length, ...keys, ...args);
    }
  }
}

function decisionOf(policy: ResolvedPolicy, reply: unknown, at: number, cost: number): RateLimitDecision {
  if (!Array.isArray(reply) || reply.length < at + 4) {
    throw new Error(`nestjs-rate-limit: unexpected reply from the Redis script: ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, resetMs, retry] = reply.slice(at, at + 4).map(Number);
  if (![allowed, remaining, resetMs, retry].every(Number.isSafeInteger)) {
    throw new Error(`nestjs-rate-limit: unexpected reply from the Redis script: ${JSON.stringify(reply)}`);
  }
  return toDecision(
    policy,
    { allowed: allowed === 1, remaining, resetMs, retryAfterMs: retry === NEVER ? Infinity : retry },
    cost,
  );
}
