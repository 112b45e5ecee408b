import type { RateLimitDecision, ResolvedPolicy } from '../../policy/policy.types.js';
import { DENY_CACHE_TRUST_MS } from '../../stores/engine-store.js';

/**
 * How long a denial of the store answers at most, in real ms, by default (the `denyCacheMs` option): the longest
 * a change made outside the module (an operator's `DEL` or `FLUSHALL`, a restored backup), which no feed
 * announces, goes unseen. One second: under a flood on one key the store still sees one call a second instead of
 * one a request, and the staleness equals the bound the module keeps for the changes it does announce.
 */
export const DENY_CACHE_MS = 1000;

/** DenyCache's settings; each has a default. */
export interface DenyCacheOptions {
  /** Denials kept at once; beyond, the oldest is dropped (default 10,000). */
  readonly maxKeys?: number;
  /** Real time in ms, for the trust of denials (never the module's clock, which a test may stop or jump). */
  readonly realNow?: () => number;
  /** How the feed of changes names a key (RateLimitStoreChanges.keyOf); default as it is. */
  readonly feedKey?: (policy: ResolvedPolicy, key: string) => string;
  /** How long a denial answers at most, in real ms, whatever the feed confirms (default DENY_CACHE_MS). */
  readonly trustMs?: number;
}

interface Denial {
  /** The limits the store denied under: a request under higher ones (a plan upgrade) asks the store again. */
  readonly limit: number;
  readonly capacity: number;
  readonly atMs: number;
  readonly untilMs: number;
  /** When (real time) the consume that was denied went out: the denial may be stale from then on. */
  readonly sentAt: number;
  readonly cost: number;
  readonly decision: RateLimitDecision;
  /** The other policies of the denied request, as the store reported them, by `<policy id>\n<key>`. */
  readonly others: ReadonlyMap<string, RateLimitDecision> | undefined;
  /** The key's id as the feed of changes names it (`<policy id>\n<key as keyOf names it>`). */
  readonly feedId: string;
}

/** What a consume that may be remembered knew when it went out (DenyCache.begin). */
export interface DenyTicket {
  readonly seq: number;
  readonly sentAt: number;
}

/**
 * Denials the store has given, kept until the time they end. A request of at least the same cost on the same
 * policy and key, under limits no higher, before then is denied locally, without a round trip: the store already
 * said no, and it can only say no again (a denial consumes nothing), so the cache never admits anything the
 * store would not. Under a single-key flood the store sees about one call per key per retry-after, not one per
 * request. Bounded: beyond `maxKeys` the oldest denial is dropped, which only costs a round trip.
 *
 * State changed outside a decision (a reset, unblock, block or refund, here or in another instance) lifts the
 * denials of its keys: changed() is told, here at once and by the store's feed of changes from the others. A
 * denial answers only while that news would have arrived: for DENY_CACHE_TRUST_MS after its consume went out,
 * and beyond only while the feed has confirmed, within that time, that everything announced has been delivered
 * (confirmed()). A feed that fails (or a store without one) so lets a denial answer for at most that long, and
 * one that comes back (live()) clears everything, since what it missed is unknown. And whatever the feed says, a
 * denial answers for at most `trustMs` after its consume went out: changes made outside the module (`redis-cli`,
 * a restored backup) are announced by nobody.
 *
 * Denials are kept by `<policy id>\n<key>` (the raw identity: this process's memory only, and no hash on the path
 * of a request); changes name keys as the feed does (`feedKey`: the store's keyed hash), found through an index.
 */
export class DenyCache {
  private readonly denials = new Map<string, Denial>();
  /** The id of each denial, by its feed id. */
  private readonly byFeedId = new Map<string, string>();
  /** Counts changes; a consume's reply is not remembered when its key changed after the consume went out. */
  private seq = 0;
  /** Replies of consumes that went out before this are not remembered at all. */
  private floor = 0;
  /** The keys changed while consumes were out (by feed id), with the seq of their change. */
  private readonly changes = new Map<string, number>();
  private pending = 0;
  /** When the last confirmation of the feed was sent: every announcement before it has been delivered. */
  private confirmedAt = -Infinity;

  private readonly maxKeys: number;
  private readonly realNow: () => number;
  private readonly feedKey: (policy: ResolvedPolicy, key: string) => string;
  private readonly trustMs: number;

  constructor(options: DenyCacheOptions = {}) {
    this.maxKeys = options.maxKeys ?? 10_000;
    this.realNow = options.realNow ?? (() => performance.now());
    this.feedKey = options.feedKey ?? ((_, key) => key);
    this.trustMs = options.trustMs ?? DENY_CACHE_MS;
  }

  get size(): number {
    return this.denials.size;
  }

  /** A local denial of `cost` units of `policy` for `key` at `nowMs`, or undefined: ask the store. */
  check(policy: ResolvedPolicy, key: string, cost: number, nowMs: number): RateLimitDecision | undefined {
    if (this.denials.size === 0) return undefined;
    const id = `${policy.id}\n${key}`;
    const denial = this.denials.get(id);
    if (denial === undefined) return undefined;
    const realNow = this.realNow();
    if (
      denial.untilMs <= nowMs ||
      realNow - denial.sentAt > this.trustMs ||
      realNow - Math.max(denial.sentAt, this.confirmedAt) > DENY_CACHE_TRUST_MS
    ) {
      this.drop(id, denial);
      return undefined;
    }
    if (cost < denial.cost || policy.limit > denial.limit || policy.capacity > denial.capacity) return undefined;
    const elapsedMs = nowMs - denial.atMs;
    return {
      ...denial.decision,
      retryAfterMs: denial.untilMs - nowMs,
      resetMs: Math.max(denial.untilMs - nowMs, denial.decision.resetMs - elapsedMs),
    };
  }

  /**
   * How the other policies of a request stood when the store gave the denial that check() answered with
   * (their resets counted down since), so that a local 429 shows the same policies as the store's did.
   */
  others(policy: ResolvedPolicy, key: string, nowMs: number): ReadonlyMap<string, RateLimitDecision> | undefined {
    const denial = this.denials.get(`${policy.id}\n${key}`);
    if (denial?.others === undefined) return undefined;
    const elapsedMs = nowMs - denial.atMs;
    const out = new Map<string, RateLimitDecision>();
    for (const [id, d] of denial.others) out.set(id, { ...d, resetMs: Math.max(0, d.resetMs - elapsedMs) });
    return out;
  }

  /** A consume goes out whose denials may be remembered: call end() once its reply is handled. */
  begin(): DenyTicket {
    this.pending++;
    return { seq: this.seq, sentAt: this.realNow() };
  }

  /** The reply of a consume begun with begin() has been handled (or it failed). */
  end(): void {
    this.pending--;
    if (this.pending === 0) this.changes.clear();
  }

  /**
   * Remembers a denial the store gave at `nowMs` to the consume of `ticket`, with the request's other
   * decisions (`others`), unless the key changed since that consume went out.
   */
  remember(
    policy: ResolvedPolicy,
    key: string,
    cost: number,
    decision: RateLimitDecision,
    nowMs: number,
    ticket: DenyTicket,
    others?: ReadonlyMap<string, RateLimitDecision>,
  ): void {
    if (decision.allowed || !Number.isFinite(decision.retryAfterMs) || decision.retryAfterMs <= 0) return;
    if (ticket.seq < this.floor) return;
    const feedId = this.feedIdOf(policy, key);
    if ((this.changes.get(feedId) ?? -1) > ticket.seq) return;
    const id = `${policy.id}\n${key}`;
    const before = this.denials.get(id);
    if (before !== undefined) this.drop(id, before);
    const { limit, capacity } = policy;
    const untilMs = nowMs + decision.retryAfterMs;
    const { sentAt } = ticket;
    this.denials.set(id, { limit, capacity, atMs: nowMs, untilMs, sentAt, cost, decision, others, feedId });
    this.byFeedId.set(feedId, id);
    if (this.denials.size > this.maxKeys) {
      const oldest = this.denials.entries().next();
      if (oldest.done !== true) this.drop(...oldest.value);
    }
  }

  /** The id of a policy and key as the feed of changes names it: `<policy id>\n<key as keyOf names it>`. */
  private feedIdOf(policy: ResolvedPolicy, key: string): string {
    return `${policy.id}\n${this.feedKey(policy, key)}`;
  }

  /** Forgets a key's denial: its state changed outside a decision (here, or announced by another instance). */
  forget(policy: ResolvedPolicy, key: string): void {
    this.changed([this.feedIdOf(policy, key)]);
  }

  /**
   * Forgets the denials of these ids (`<policy id>\n<key>`, the key as the feed names it: feedIdOf), and of the
   * replies in flight for them.
   */
  changed(feedIds: readonly string[]): void {
    this.seq++;
    for (const feedId of feedIds) {
      const id = this.byFeedId.get(feedId);
      if (id !== undefined) {
        this.denials.delete(id);
        this.byFeedId.delete(feedId);
      }
      if (this.pending > 0) this.changes.set(feedId, this.seq);
    }
    if (this.changes.size > this.maxKeys) this.clear();
  }

  /** The feed confirmed that everything announced before `sentAt` (real time) has been delivered. */
  confirmed(sentAt: number): void {
    if (sentAt > this.confirmedAt) this.confirmedAt = sentAt;
  }

  /**
   * The feed is subscribed (again) since `since` (real time): what was announced before is unknown, so every
   * denial is forgotten, and so are the replies of the consumes out now.
   */
  live(since: number): void {
    this.clear();
    this.confirmed(since);
  }

  /** Forgets every denial, and the replies in flight (all state was removed). */
  forgetAll(): void {
    this.clear();
  }

  private drop(id: string, denial: Denial): void {
    this.denials.delete(id);
    this.byFeedId.delete(denial.feedId);
  }

  private clear(): void {
    this.denials.clear();
    this.byFeedId.clear();
    this.changes.clear();
    this.floor = ++this.seq;
  }
}
