import { ALGORITHM_STEPS, kernelOf, type StepResult } from '../../lib/algorithms/index.js';
import type { Clock } from '../../lib/util/clock.js';
import type { RateLimitDecision, ResolvedPolicy } from '../../lib/policy/policy.types.js';
import { maxWaitMs } from '../../lib/policy/max-wait.js';
import type { EngineStore, EngineStoreItem } from '../../lib/stores/engine-store.js';
import type { RateLimitStoreItem } from '../../lib/stores/rate-limit-store.js';

// Written from the store contract (RateLimitStore, RateLimitStoreItem, EngineStore's `upTo`, the design notes), not from the
// procedure the memory store runs (lib/stores/consume-all.ts): it imports nothing of it, so the memory store's
// conformance run compares two implementations, not one with itself. What it shares with every store is the
// pure algorithm steps, each of which has its own absolute tests (test/unit/algorithms).

/** What the reference holds for a key: the algorithm's state, and the end of a block (0: none). */
interface Entry {
  readonly state: unknown;
  readonly blockedUntilMs: number;
}

/** A step's outcome without its state: what a decision is made from. */
type Outcome = Omit<StepResult<unknown>, 'state'>;

const stepOf = (policy: ResolvedPolicy) => ALGORITHM_STEPS[kernelOf(policy)];

/**
 * The public decision of an outcome; a cost that can never fit says so. No wait or reset is longer than the
 * policy's longest wait (the store contract since issue 41: a clock behind, or state of another shape, never
 * asks for more).
 */
function decisionOf(policy: ResolvedPolicy, outcome: Outcome, cost: number): RateLimitDecision {
  const longestMs = maxWaitMs(policy);
  const decision: RateLimitDecision = {
    allowed: outcome.allowed,
    policy: policy.name,
    limit: policy.capacity,
    remaining: outcome.remaining,
    resetMs: Math.min(outcome.resetMs, longestMs),
    retryAfterMs: outcome.retryAfterMs === Infinity ? Infinity : Math.min(outcome.retryAfterMs, longestMs),
  };
  if (outcome.retryAfterMs === Infinity) {
    decision.message = `cost ${cost} is larger than the capacity ${policy.capacity} of policy "${policy.name}", so it can never be allowed`;
  }
  return decision;
}

/** A key under a block: denied with nothing left until the block ends, whatever its state. */
function blockedDecision(policy: ResolvedPolicy, untilMs: number, nowMs: number): RateLimitDecision {
  // a policy's own block waits at most the policy's longest wait; RateLimitService.block's what it set
  const waitMs = policy.blockMs === undefined ? untilMs - nowMs : Math.min(untilMs - nowMs, maxWaitMs(policy));
  return {
    allowed: false,
    blocked: true,
    policy: policy.name,
    limit: policy.capacity,
    remaining: 0,
    resetMs: waitMs,
    retryAfterMs: waitMs,
  };
}

/**
 * An item's step and the units it takes: for one that asks for up to more than its cost (a lease), the most
 * units in [cost, upTo] that the step allows, found by trying each in turn (not from `remaining`, as the stores
 * compute it: the two agree only if every algorithm's `remaining` is exact).
 */
function stepUpTo(item: EngineStoreItem, state: unknown, nowMs: number): [StepResult<unknown>, number] {
  const { policy, cost, upTo } = item;
  let step = stepOf(policy).step(state, policy, nowMs, cost);
  let taken = cost;
  if (!step.allowed || upTo === undefined || cost < 1) return [step, taken];
  for (let more = cost + 1; more <= upTo; more++) {
    const wider = stepOf(policy).step(state, policy, nowMs, more);
    if (!wider.allowed) break;
    [step, taken] = [wider, more];
  }
  return [step, taken];
}

/** One item of a consume, decided: its step (undefined when a block denied it) and its decision. */
interface Decided {
  readonly item: EngineStoreItem;
  readonly step: StepResult<unknown> | undefined;
  readonly decision: RateLimitDecision;
}

/**
 * The TypeScript reference: the pure algorithm steps over a plain Map that never expires or evicts anything.
 * A store agrees with it when its expiry, eviction, encoding and all-or-nothing procedure never change a
 * decision.
 */
export class ReferenceStore implements EngineStore {
  readonly grantsUpTo = true;
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly clock: Clock) {}

  /**
   * All or nothing: every item is decided against the keys as they were before the call (items on one key
   * see the units of the allowed items before them); a denied enforced item (shadow items never deny) denies
   * the request, and then nothing is written but the block its denial starts, and the items that would have
   * passed report their key as it stands. Otherwise every allowed item is written.
   */
  async consume(items: readonly EngineStoreItem[]): Promise<RateLimitDecision[]> {
    const nowMs = this.clock.now();
    const before = new Map<string, Entry | undefined>();
    for (const { policy, key } of items) {
      const id = this.idOf(policy, key);
      if (!before.has(id)) before.set(id, this.entries.get(id));
    }
    const after = new Map<string, unknown>();
    const decided = items.map((item): Decided => {
      const id = this.idOf(item.policy, item.key);
      const entry = before.get(id);
      if (entry !== undefined && entry.blockedUntilMs > nowMs) {
        return { item, step: undefined, decision: blockedDecision(item.policy, entry.blockedUntilMs, nowMs) };
      }
      const state = after.has(id) ? after.get(id) : entry?.state;
      const [step, taken] = stepUpTo(item, state, nowMs);
      if (step.allowed && item.cost > 0) after.set(id, step.state);
      const decision = decisionOf(item.policy, step, item.cost);
      if (taken !== item.cost) decision.granted = taken;
      return { item, step, decision };
    });
    const denying = decided.filter(({ item, decision }) => !decision.allowed && item.shadow !== true);
    if (denying.length === 0) {
      for (const { item, step } of decided) {
        if (step?.allowed === true && item.cost > 0) this.write(item, step.state, 0);
      }
      return decided.map(({ decision }) => decision);
    }
    return decided.map(({ item, step, decision }) => {
      if (step === undefined) return decision;
      const entry = before.get(this.idOf(item.policy, item.key));
      if (step.allowed) {
        // Nothing was consumed: the key as it stands, as a cost of 0 finds it.
        return decisionOf(item.policy, stepOf(item.policy).step(entry?.state, item.policy, nowMs, 0), 0);
      }
      const blockMs = item.shadow === true ? undefined : item.policy.blockMs;
      if (blockMs === undefined) return decision;
      this.write(item, entry?.state, nowMs + blockMs);
      return {
        ...decision,
        blocked: true,
        resetMs: Math.max(decision.resetMs, blockMs),
        retryAfterMs: Math.max(decision.retryAfterMs, blockMs),
      };
    });
  }

  /** As a consume of cost 1 would decide, changing nothing: `remaining` and `resetMs` as the key stands. */
  async peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    const nowMs = this.clock.now();
    return items.map(({ policy, key }) => this.standing(policy, this.entries.get(this.idOf(policy, key)), nowMs));
  }

  /** Gives each item's cost back, one item after another, keeping a block; reports each key as peek does. */
  async refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    const nowMs = this.clock.now();
    return items.map((item) => {
      const entry = this.entries.get(this.idOf(item.policy, item.key));
      const state = stepOf(item.policy).refund(entry?.state, item.policy, nowMs, item.cost);
      this.write(item, state, entry !== undefined && entry.blockedUntilMs > nowMs ? entry.blockedUntilMs : 0);
      return this.standing(item.policy, this.entries.get(this.idOf(item.policy, item.key)), nowMs);
    });
  }

  /**
   * Takes each item's cost without deciding (past the limit), one item after another, keeping a block; a
   * shadow item (which consumes nothing) and a cost of 0 take nothing; a concurrency limit cannot be charged.
   * Reports each key as peek does.
   */
  async charge(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    const slots = items.find((item) => item.policy.algorithm === 'concurrency');
    if (slots !== undefined) throw new TypeError(`policy "${slots.policy.name}" is a concurrency limit`);
    const nowMs = this.clock.now();
    return items.map((item) => {
      const entry = this.entries.get(this.idOf(item.policy, item.key));
      const charged = item.cost > 0 && item.shadow !== true;
      const state = charged ? stepOf(item.policy).charge(entry?.state, item.policy, nowMs, item.cost) : entry?.state;
      this.write(item, state, entry !== undefined && entry.blockedUntilMs > nowMs ? entry.blockedUntilMs : 0);
      return this.standing(item.policy, this.entries.get(this.idOf(item.policy, item.key)), nowMs);
    });
  }

  async reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    for (const { policy, key } of items) this.entries.delete(this.idOf(policy, key));
  }

  async block(items: readonly Omit<RateLimitStoreItem, 'cost'>[], durationMs: number): Promise<void> {
    const untilMs = this.clock.now() + durationMs;
    for (const item of items) this.write(item, this.entries.get(this.idOf(item.policy, item.key))?.state, untilMs);
  }

  async unblock(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    for (const item of items) this.write(item, this.entries.get(this.idOf(item.policy, item.key))?.state, 0);
  }

  /** How a key stands: blocked, or as a request of cost 1 would find it (remaining and reset as it is). */
  private standing(policy: ResolvedPolicy, entry: Entry | undefined, nowMs: number): RateLimitDecision {
    if (entry !== undefined && entry.blockedUntilMs > nowMs)
      return blockedDecision(policy, entry.blockedUntilMs, nowMs);
    const now = stepOf(policy).step(entry?.state, policy, nowMs, 0);
    const one = stepOf(policy).step(entry?.state, policy, nowMs, 1);
    const outcome = { ...now, allowed: one.allowed, retryAfterMs: one.allowed ? 0 : one.retryAfterMs };
    return decisionOf(policy, outcome, 1);
  }

  /** Keeps `state` (and a block until `blockedUntilMs`, if it has not ended) for the item's key. */
  private write(item: Omit<RateLimitStoreItem, 'cost'>, state: unknown, blockedUntilMs: number): void {
    const id = this.idOf(item.policy, item.key);
    const blocked = blockedUntilMs > this.clock.now();
    if (state === undefined && !blocked) this.entries.delete(id);
    else this.entries.set(id, { state, blockedUntilMs: blocked ? blockedUntilMs : 0 });
  }

  private idOf(policy: ResolvedPolicy, key: string): string {
    return `${policy.id}:${key}`;
  }
}
