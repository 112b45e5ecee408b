import { type Clock, systemClock } from '../../util/clock.js';
import type { RateLimitDecision } from '../../policy/policy.types.js';
import { DecidingStore } from '../deciding-store.js';
import { decisionsFromReply } from '../decisions.js';
import type { NodeRedisClient, RedisClient, ValkeyGlideClient } from '../client-types.js';
import type { RateLimitStoreItem } from '../rate-limit-store.js';
import type { EngineStore, RateLimitStoreChanges, StoreCallItem } from '../engine-store.js';
import { checkKeyPrefix, type IdentityOptions, StoredIdentities } from '../storage-key.js';
import { acrossSlots, consumeAcrossSlots, type RunInSlot, slotGroups, slotItems } from './across-slots.js';
import { batchArgs, callFields, type RequestArgs, requestArgs, splitReply } from './call-args.js';
import { CallBatcher } from './call-batcher.js';
import { RedisChangeFeed } from './pubsub-changes.js';
import { RedisOverrides } from './redis-overrides.js';
import { RedisPolicyRecords } from './redis-policy-records.js';
import { driverOf } from './clients/driver-of.js';
import { isReplyError, type RedisDriver } from './clients/redis-driver.js';
import { unlinkUnder } from './reset-all.js';
import { LUA_PROGRAM, RedisLuaProgram } from './lua-program.js';
import type { LuaProgram } from './rate-limit.lua.js';

/** Options of the Redis store. */
export interface RedisRateLimitStoreOptions extends IdentityOptions {
  /**
   * An ioredis or iovalkey `Redis` or `Cluster`, a node-redis client, Cluster or Sentinel (connected), or a
   * Valkey GLIDE GlideClient or GlideClusterClient. The store never changes it, and never closes it.
   */
  client: RedisClient | NodeRedisClient | ValkeyGlideClient;
  /** Time source, or 'store' to read Redis `TIME` inside the script (one clock for every instance). */
  clock?: Clock | 'store';
  /** Default 'rl:'. */
  keyPrefix?: string;
  /** Milliseconds added to every key's TTL, a tolerance for clock differences between instances; default 1000. */
  ttlSlackMs?: number;
}

type Operation = 'consume' | 'check' | 'peek' | 'refund' | 'charge' | 'reset' | 'block' | 'unblock';

/**
 * The production store: state in Redis, shared by every process. Each operation is ONE call (FCALL, or
 * EVALSHA of the same code) of one Lua program, whatever the number of policies, and a consume writes only
 * when every policy allows it; on one Redis, the consumes of one turn of the event loop share a call.
 * @example new RedisRateLimitStore({ client: new Redis(process.env.REDIS_URL) })
 */
export class RedisRateLimitStore extends DecidingStore implements EngineStore {
  /** The connection the store sends its commands on. */
  readonly client: RedisClient | NodeRedisClient | ValkeyGlideClient;
  /**
   * Changes outside decisions, announced on `<keyPrefix>changes` (pub/sub) to every instance; a subscriber
   * connection is made from the client only while the module listens.
   * @internal
   */
  readonly changes: RateLimitStoreChanges | undefined;
  /**
   * A consume takes up to an item's `upTo` (leases): the script's decide_one.
   * @internal
   */
  readonly grantsUpTo = true;
  /** How the store sends commands on `client`, whichever package made it. */
  private readonly redis: RedisDriver;
  private readonly clock: Clock | undefined;
  private readonly keyPrefix: string;
  /**
   * The overrides of RateLimitService.override, in the hash `<keyPrefix>overrides`.
   * @internal
   */
  readonly overrides: RedisOverrides;
  /**
   * The policies the instances recorded at start, in the hash `<keyPrefix>policies`.
   * @internal
   */
  readonly policies: RedisPolicyRecords;
  /** The identities as keys hold them (a keyed hash unless `readableKeys`). */
  private readonly identities: StoredIdentities;
  private readonly ttlSlack: string;
  /** FCALL of the Redis 7 function or EVALSHA of the script (lua-program.ts). */
  private readonly program: RedisLuaProgram;
  private readonly batcher: CallBatcher<RequestArgs>;

  constructor(options: RedisRateLimitStoreOptions) {
    super();
    if (options?.client === undefined) {
      throw new TypeError(
        'nest-rate-limit: RedisRateLimitStore needs `client`, an ioredis, node-redis or Valkey GLIDE client',
      );
    }
    this.redis = driverOf(options.client, 'the `client` of RedisRateLimitStore');
    this.client = options.client;
    this.clock = options.clock === 'store' ? undefined : (options.clock ?? systemClock);
    this.keyPrefix = checkKeyPrefix(options.keyPrefix ?? 'rl:');
    this.identities = new StoredIdentities(this.keyPrefix, options);
    this.overrides = new RedisOverrides(this.redis, this.keyPrefix, this.identities);
    this.policies = new RedisPolicyRecords(this.redis, this.keyPrefix, this.identities);
    const slack = options.ttlSlackMs ?? 1000;
    if (!Number.isSafeInteger(slack) || slack < 0) {
      throw new TypeError(`nest-rate-limit: ttlSlackMs must be an integer >= 0, got ${slack}`);
    }
    this.ttlSlack = String(slack);
    this.batcher = new CallBatcher(this.sendBatch);
    this.changes = this.redis.canSubscribe
      ? new RedisChangeFeed(this.redis, `${this.keyPrefix}changes`, this.identities)
      : undefined;
    this.program = new RedisLuaProgram(this.redis, (options as { [LUA_PROGRAM]?: LuaProgram })[LUA_PROGRAM]);
  }

  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.decide('consume', items);
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    await this.eachSlot('reset', items);
  }

  ping(): Promise<unknown> {
    return this.redis.ping();
  }

  /** Removes every key under the store's prefix (each Cluster master's), in batches; resolves with how many. */
  resetAll(): Promise<number> {
    // The recorded policies describe the running instances, not state: they stay.
    return unlinkUnder(this.redis, this.keyPrefix, new Set([`${this.keyPrefix}policies`]));
  }

  /** Loads the function (or the script) into Redis ahead of the first request (both also load on demand). */
  load(): Promise<void> {
    return this.program.load();
  }

  // Not async functions: a call on one slot (every call on a standalone Redis) is one async frame, inSlot's.
  protected decide(
    op: 'consume' | 'peek' | 'refund' | 'charge',
    items: readonly StoreCallItem[],
  ): Promise<RateLimitDecision[]> {
    try {
      if (items.length === 0) return Promise.resolve([]);
      const groups = slotGroups(items, this.identities, this.redis.isCluster);
      if (groups.length === 1) return this.inSlot(op, items);
      return op === 'consume'
        ? consumeAcrossSlots(items, groups, this.inSlot)
        : acrossSlots(op, items, groups, this.inSlot);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The decisions of one call on items of one slot ('check' replies as a denied consume would). */
  private readonly inSlot: RunInSlot = async (op, part) =>
    decisionsFromReply(op === 'check' ? 'consume' : op, part, await this.run(op, part), 'the Redis script');

  async block(items: readonly Omit<RateLimitStoreItem, 'cost'>[], durationMs: number): Promise<void> {
    await this.eachSlot(
      'block',
      items.map((item) => ({ ...item, cost: durationMs })),
    );
  }

  async unblock(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    await this.eachSlot('unblock', items);
  }

  /** One call per Cluster slot of the items (one call on a standalone Redis). */
  private async eachSlot(op: Operation, items: readonly StoreCallItem[]): Promise<void> {
    if (items.length === 0) return;
    const groups = slotGroups(items, this.identities, this.redis.isCluster);
    await Promise.all(groups.map((group) => this.run(op, slotItems(items, group))));
  }

  /** One call; what throws here rejects the caller's async frame (inSlot, eachSlot). */
  private run(op: Operation, items: readonly StoreCallItem[]): Promise<unknown> {
    const request = requestArgs(op, items, this.identities, this.clock ?? systemClock);
    // The consumes on one connection are gathered per turn of the event loop.
    if (op === 'consume' && !this.redis.isCluster) return this.batcher.consume(request);
    return this.program.call(request.keys, [op, this.now(), this.ttlSlack, ...callFields(request)]);
  }

  private now(): string {
    return this.clock === undefined ? '' : String(this.clock.now());
  }

  /**
   * One call for the consumes the batcher gathered (the dispatcher's 'batch'), split back into each request's
   * reply. When Redis refuses it (an error in one of its requests, such as a key of another type), each request
   * is sent on its own, so that only its own call can fail it.
   */
  private readonly sendBatch = async (requests: readonly RequestArgs[]): Promise<unknown[]> => {
    const now = this.now();
    const alone = (request: RequestArgs) =>
      this.program.call(request.keys, ['consume', now, this.ttlSlack, ...callFields(request)]);
    if (requests.length === 1) return [await alone(requests[0] as RequestArgs)];
    const { keys, args } = batchArgs(requests, now, this.ttlSlack);
    try {
      return splitReply(await this.program.call(keys, args), requests);
    } catch (error) {
      if (!isReplyError(error)) throw error;
      return requests.map(alone);
    }
  };
}
