import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';

import { ALGORITHM_CODES } from '../../algorithms/index.js';
import { periodOf } from '../../algorithms/quota/quota.js';
import { type Clock, systemClock } from '../../clock.js';
import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import { decisionsFromReply } from '../engine.js';
import type { RateLimitStore, RateLimitStoreItem } from '../rate-limit-store.js';
import { checkKeyPrefix, storageKey } from '../storage-key.js';
import { RATE_LIMIT_FUNCTION, RATE_LIMIT_LIBRARY, RATE_LIMIT_SCRIPT, RATE_LIMIT_SCRIPT_SHA } from './rate-limit.lua.js';

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

type Operation = 'consume' | 'check' | 'peek' | 'refund' | 'reset' | 'block' | 'unblock';
type Item = Pick<RateLimitStoreItem, 'policy' | 'key' | 'shadow'> & { cost?: number };

/**
 * The production store: state in Redis, shared by every process. Each operation is ONE EVALSHA of one Lua
 * script, whatever the number of policies, and a consume writes only when every policy allows it.
 * @example new RedisRateLimitStore({ client: new Redis(process.env.REDIS_URL) })
 */
export class RedisRateLimitStore implements RateLimitStore {
  /** The connection the store sends its commands on. */
  readonly client: Redis | Cluster;
  private readonly clock: Clock | undefined;
  private readonly keyPrefix: string;
  private readonly ttlSlack: string;
  /**
   * Whether decisions go through the Redis 7 function (FCALL: the twins built once, not at every call) or
   * the script (EVALSHA): a Cluster, a Redis before 7, or one that refuses FUNCTION LOAD (ACLs) takes the
   * script. Decided at the first call (or load()).
   */
  private functions: 'unknown' | 'yes' | 'no';
  private loadingFunction: Promise<void> | undefined;

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
    // Every master of a Cluster would need the library: the script, which travels with the call, is simpler.
    this.functions = this.client.isCluster ? 'no' : 'unknown';
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
    await this.eachSlot('reset', items);
  }

  ping(): Promise<unknown> {
    return this.client.ping();
  }

  /** Loads the function (or the script) into Redis ahead of the first request (both also load on demand). */
  async load(): Promise<void> {
    if (this.functions !== 'no') await this.loadFunction();
    if (this.functions === 'no') await this.client.script('LOAD', RATE_LIMIT_SCRIPT);
  }

  /**
   * FUNCTION LOAD of the library, once for all the calls that found it missing; a Redis that answers with an
   * error (before 7, ACLs) gets the script from then on.
   */
  private loadFunction(): Promise<void> {
    this.loadingFunction ??= this.client
      .call('FUNCTION', 'LOAD', 'REPLACE', RATE_LIMIT_LIBRARY)
      .then(
        () => {
          this.functions = 'yes';
        },
        (error: unknown) => {
          if (!isReplyError(error)) throw error;
          this.functions = 'no';
        },
      )
      .finally(() => (this.loadingFunction = undefined));
    return this.loadingFunction;
  }

  private async decide(op: 'consume' | 'peek' | 'refund', items: readonly Item[]): Promise<RateLimitDecision[]> {
    if (items.length === 0) return [];
    const groups = this.client.isCluster ? this.bySlot(items) : [items.map((_, i) => i)];
    if (groups.length === 1) return this.decisions(op, items, await this.run(op, items));
    return op === 'consume' ? this.consumeAcrossSlots(items, groups) : this.acrossSlots(op, items, groups);
  }

  private decisions(op: 'consume' | 'peek' | 'refund', items: readonly Item[], reply: unknown): RateLimitDecision[] {
    return decisionsFromReply(op, items, reply, 'the Redis script');
  }

  /** Indexes of the items grouped by the Cluster slot of their keys (one script may touch one slot only). */
  private bySlot(items: readonly Item[]): number[][] {
    const groups = new Map<number, number[]>();
    items.forEach(({ policy, key }, i) => {
      const slot = calculateSlot(storageKey(this.keyPrefix, policy.id, key));
      const group = groups.get(slot);
      if (group === undefined) groups.set(slot, [i]);
      else group.push(i);
    });
    return [...groups.values()];
  }

  private async acrossSlots(
    op: 'peek' | 'refund',
    items: readonly Item[],
    groups: number[][],
  ): Promise<RateLimitDecision[]> {
    const out: RateLimitDecision[] = new Array(items.length);
    await Promise.all(
      groups.map(async (group) => {
        const part = group.map((i) => items[i]);
        this.decisions(op, part, await this.run(op, part)).forEach((d, j) => (out[group[j]] = d));
      }),
    );
    return out;
  }

  /**
   * A consume whose keys span several Cluster slots: first every slot checks its items (deciding as a consume
   * would, writing nothing), all at once; when one denies, nothing was written anywhere — all-or-nothing as in
   * one script, whatever the clocks. Otherwise every slot consumes its items; when a concurrent request took
   * units meanwhile and a slot denies, what the others consumed is refunded: the cluster can under-admit while
   * a refund is on its way, never over-admit. Two round trips for a request whose policies span slots.
   */
  private async consumeAcrossSlots(items: readonly Item[], groups: number[][]): Promise<RateLimitDecision[]> {
    const parts = groups.map((group) => group.map((i) => items[i]));
    const place = (decided: RateLimitDecision[][]): RateLimitDecision[] => {
      const out: RateLimitDecision[] = new Array(items.length);
      decided.forEach((decisions, g) => decisions.forEach((d, j) => (out[groups[g][j]] = d)));
      return out;
    };
    const checked = await Promise.all(
      parts.map(async (part) => this.decisions('consume', part, await this.run('check', part))),
    );
    if (checked.some((decisions, g) => denied(parts[g], decisions)))
      return this.blockAcrossSlots(parts, checked, place);
    const decided = await Promise.all(
      parts.map(async (part) => this.decisions('consume', part, await this.run('consume', part))),
    );
    const out = place(decided);
    if (!decided.some((decisions, g) => denied(parts[g], decisions))) return out;
    const consumed = decided.map((decisions, g) => (denied(parts[g], decisions) ? -1 : g)).filter((g) => g >= 0);
    await Promise.all(
      consumed.map(async (g) => {
        // A shadow item that would have denied consumed nothing: nothing to give back.
        const taken = groups[g].filter((_, j) => decided[g][j].allowed);
        const part = taken.map((i) => items[i]);
        let reply: unknown;
        try {
          reply = await this.run('refund', part);
        } catch {
          return; // the request stays denied; the units stay taken until they expire (under-admission only)
        }
        this.decisions('refund', part, reply).forEach((d, j) => {
          out[taken[j]] = { ...d, allowed: true, retryAfterMs: 0 };
        });
      }),
    );
    return out;
  }

  /**
   * A request that the check across slots denied: nothing was written, but a denial of a policy with a block
   * must start its block. Each slot with such a denial consumes its items, which denies again and writes the
   * block (or, if units came free meanwhile, consumes, and is given back at once).
   */
  private async blockAcrossSlots(
    parts: readonly Item[][],
    checked: RateLimitDecision[][],
    place: (decided: RateLimitDecision[][]) => RateLimitDecision[],
  ): Promise<RateLimitDecision[]> {
    const blocking = (part: readonly Item[], decisions: readonly RateLimitDecision[]) =>
      decisions.some(
        (d, j) => !d.allowed && d.blocked !== true && part[j].shadow !== true && part[j].policy.blockMs !== undefined,
      );
    await Promise.all(
      parts.map(async (part, g) => {
        if (!blocking(part, checked[g])) return;
        const decided = this.decisions('consume', part, await this.run('consume', part));
        if (denied(part, decided)) checked[g] = decided;
        else
          await this.run(
            'refund',
            part.filter((_, j) => decided[j].allowed),
          );
      }),
    );
    return place(checked);
  }

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
  private async eachSlot(op: Operation, items: readonly Item[]): Promise<void> {
    if (items.length === 0) return;
    const groups = this.client.isCluster ? this.bySlot(items) : [items.map((_, i) => i)];
    await Promise.all(
      groups.map((group) =>
        this.run(
          op,
          group.map((i) => items[i]),
        ),
      ),
    );
  }

  private async run(op: Operation, items: readonly Item[]): Promise<unknown> {
    const keys: string[] = [];
    const args: string[] = [op, this.clock === undefined ? '' : String(this.clock.now()), this.ttlSlack];
    for (const { policy, key, cost = 0, shadow } of items) {
      keys.push(storageKey(this.keyPrefix, policy.id, key));
      const [algorithm, limit, windowMs, capacity, nextEnd] = argsOf(policy, this.clock ?? systemClock);
      // A shadow item's algorithm code is negated (see the script's ARGV).
      args.push(
        shadow === true && (op === 'consume' || op === 'check') ? `-${algorithm}` : algorithm,
        limit,
        windowMs,
        capacity,
        String(cost),
      );
      if (nextEnd !== undefined) args.push(nextEnd);
      if (policy.blockMs !== undefined) args.push(String(policy.blockMs));
    }
    if (this.functions !== 'no') {
      try {
        return await this.client.call('FCALL', RATE_LIMIT_FUNCTION, keys.length, ...keys, ...args);
      } catch (error) {
        if (!isReplyError(error)) throw error;
        // Not there yet, or flushed (FUNCTION FLUSH): load it and call again; no FCALL at all: the script.
        if (!error.message.includes('Function not found') && !/unknown command/i.test(error.message)) throw error;
        await this.loadFunction();
        if (this.functions === 'yes')
          return this.client.call('FCALL', RATE_LIMIT_FUNCTION, keys.length, ...keys, ...args);
      }
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

/**
 * The script arguments of a policy, as strings, computed once per policy. A quota passes its current
 * period instead of a window (Lua knows no time zones), and the end of the next period, where a key may be
 * already when another instance's clock is ahead; its edges come from the app's clock, also when the script
 * reads Redis TIME.
 */
type PolicyArgs = readonly [string, string, string, string, string?];
const policyArgs = new WeakMap<ResolvedPolicy, PolicyArgs>();
function argsOf(policy: ResolvedPolicy, clock: Clock): PolicyArgs {
  if (policy.quota !== undefined) {
    const { startMs, endMs, nextEndMs } = periodOf(policy, clock.now());
    return [codeOf(policy), String(policy.limit), String(startMs), String(endMs), String(nextEndMs)];
  }
  let args = policyArgs.get(policy);
  if (args === undefined) {
    args = [codeOf(policy), String(policy.limit), String(policy.windowMs), String(policy.capacity)];
    policyArgs.set(policy, args);
  }
  return args;
}

/** Whether a slot's decisions deny the request: one of its enforced items was denied. */
const denied = (part: readonly Item[], decisions: readonly RateLimitDecision[]): boolean =>
  decisions.some((d, j) => !d.allowed && part[j].shadow !== true);

/** The script's code of a policy's algorithm, with 16 added when the policy blocks after a denial. */
const codeOf = (policy: ResolvedPolicy): string =>
  String(ALGORITHM_CODES[policy.algorithm] + (policy.blockMs === undefined ? 0 : 16));

/** An error Redis answered with (as opposed to a connection that failed). */
function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}
