import { type Algorithm, ALGORITHM_STEPS, kernelOf, type StepResult } from '../algorithms/index.js';
import { notChargeable } from '../algorithms/concurrency/concurrency.js';
import { elementAt } from '../util/element-at.js';
import type { RateLimitAlgorithm, RateLimitDecision, ResolvedPolicy } from '../policy/policy.types.js';
import { Blocked, blockedDecision, blockingDenial, unwrapBlock, withBlock } from './blocked-state.js';
import { toDecision } from './decisions.js';
import type { EngineStoreItem } from './engine-store.js';
import type { RateLimitStoreItem } from './rate-limit-store.js';

/** State access for the procedures below: the memory store's map, or any other synchronous table. */
export interface StateTable {
  get(key: string, algorithm: RateLimitAlgorithm): unknown;
  /** Stores `state` for `ttlMs`; undefined state or ttlMs <= 0 deletes the key. */
  set(key: string, algorithm: RateLimitAlgorithm, state: unknown, ttlMs: number): void;
}

// consumeAll pushes one step per item, in the order of the items.
const STEPS = 'the steps of consumeAll';
const ITEMS = 'the items of consumeAll';

/**
 * Decides every item together and writes only if every enforced item is allowed (then every allowed item:
 * a shadow item that would deny consumes nothing, and never denies the others). Items on the same key see
 * the effect of the items before them. When the request is denied, the items that would have passed report
 * the key as it is (nothing consumed). The Redis script implements the same procedure in Lua.
 */
export function consumeAll(items: readonly EngineStoreItem[], nowMs: number, table: StateTable): RateLimitDecision[] {
  if (items.length === 1) return [consumeOne(elementAt(items, 0, ITEMS), nowMs, table)];
  const working = new Map<string, unknown>();
  const original = new Map<string, [unknown, number]>();
  const steps: (StepResult<unknown> | RateLimitDecision)[] = [];
  let allAllowed = true;
  const granted = new Map<number, number>();
  for (const [i, item] of items.entries()) {
    const { policy, key, cost } = item;
    if (!original.has(key)) original.set(key, unwrapBlock(table.get(key, policy.algorithm)));
    const [stored, untilMs] = original.get(key) as [unknown, number];
    if (untilMs > nowMs) {
      // Blocked: denied without a step, and without extending the block.
      steps.push(blockedDecision(policy, untilMs, nowMs));
      allAllowed &&= item.shadow === true;
      continue;
    }
    const state = working.has(key) ? working.get(key) : stored;
    const [step, taken] = stepUpTo(item, state, nowMs);
    steps.push(step);
    if (taken !== cost) granted.set(i, taken);
    if (!step.allowed) {
      allAllowed &&= item.shadow === true;
      const blockMs = item.shadow === true ? undefined : policy.blockMs;
      if (blockMs !== undefined) {
        // The denial starts the policy's block, in the same step; the state stays as it was.
        const [value, ttlMs] = withBlock(stored, step.resetMs, nowMs + blockMs, nowMs);
        table.set(key, policy.algorithm, value, ttlMs);
        steps[steps.length - 1] = blockingDenial(toDecision(policy, step, cost), blockMs);
      }
    } else if (cost > 0) working.set(key, step.state);
  }
  const decided = (item: EngineStoreItem, i: number): RateLimitDecision => {
    const step = elementAt(steps, i, STEPS);
    if ('policy' in step) return step;
    const decision = toDecision(item.policy, step, item.cost);
    const taken = granted.get(i);
    if (taken !== undefined) decision.granted = taken;
    return decision;
  };
  if (allAllowed) {
    const written = new Map<string, number>();
    items.forEach((item, i) => {
      if (item.cost > 0 && elementAt(steps, i, STEPS).allowed) written.set(item.key, i);
    });
    for (const [key, i] of written) {
      const step = elementAt(steps, i, STEPS) as StepResult<unknown>;
      table.set(key, elementAt(items, i, ITEMS).policy.algorithm, step.state, step.resetMs);
    }
    return items.map(decided);
  }
  return items.map((item, i) => {
    if (!elementAt(steps, i, STEPS).allowed) return decided(item, i);
    const [state] = original.get(item.key) as [unknown, number];
    const unchanged = ALGORITHM_STEPS[kernelOf(item.policy)].step(state, item.policy, nowMs, 0);
    return toDecision(item.policy, unchanged, 0);
  });
}

/**
 * consumeAll of one item, the most common request, without its maps and arrays: the same decision and writes
 * (an item alone is all the request: written when allowed, a shadow item's denial written never).
 */
function consumeOne(item: EngineStoreItem, nowMs: number, table: StateTable): RateLimitDecision {
  const { policy, key, cost } = item;
  const value = table.get(key, policy.algorithm);
  let stored = value;
  if (value instanceof Blocked) {
    if (value.untilMs > nowMs) return blockedDecision(policy, value.untilMs, nowMs);
    stored = value.state;
  }
  // Indexed, not destructured: array destructuring goes through an iterator until the function is optimized.
  const stepped = stepUpTo(item, stored, nowMs);
  const step = stepped[0];
  const taken = stepped[1];
  const decision = toDecision(policy, step, cost);
  if (!step.allowed) {
    const blockMs = item.shadow === true ? undefined : policy.blockMs;
    if (blockMs === undefined) return decision;
    const [blocked, ttlMs] = withBlock(stored, step.resetMs, nowMs + blockMs, nowMs);
    table.set(key, policy.algorithm, blocked, ttlMs);
    return blockingDenial(decision, blockMs);
  }
  if (cost > 0) table.set(key, policy.algorithm, step.state, step.resetMs);
  if (taken !== cost) decision.granted = taken;
  return decision;
}

/**
 * One item's step, and the units it takes: its cost, or for an item that asks for up to more (a lease), as
 * many as fit up to `upTo` — the cost plus what the step at the cost leaves (`remaining` is exact), stepped
 * again from the same state; the Lua and SQL twins do the same.
 */
function stepUpTo(item: EngineStoreItem, state: unknown, nowMs: number): [StepResult<unknown>, number] {
  const { policy, cost, upTo } = item;
  const algorithm = ALGORITHM_STEPS[kernelOf(policy)];
  const step = algorithm.step(state, policy, nowMs, cost);
  if (!step.allowed || upTo === undefined || upTo <= cost || cost < 1) return [step, cost];
  const more = Math.min(upTo, cost + step.remaining);
  if (more <= cost) return [step, cost];
  const wider = algorithm.step(state, policy, nowMs, more);
  return wider.allowed ? [wider, more] : [step, cost];
}

/**
 * How a key stands: `remaining` now, allowed when a request of cost 1 would pass, and if not, when it would;
 * a blocked key is denied until its block ends.
 */
export function peekState(policy: ResolvedPolicy, value: unknown, nowMs: number): RateLimitDecision {
  const [state, untilMs] = unwrapBlock(value);
  if (untilMs > nowMs) return blockedDecision(policy, untilMs, nowMs);
  const algorithm = ALGORITHM_STEPS[kernelOf(policy)];
  const now = algorithm.step(state, policy, nowMs, 0);
  if (now.remaining >= 1) return toDecision(policy, now, 0);
  const next = algorithm.step(state, policy, nowMs, 1);
  return toDecision(policy, { ...now, allowed: false, retryAfterMs: next.retryAfterMs }, 1);
}

/** Gives each item's cost back and reports the key afterwards, as peek does; a block stays. */
export function refundAll(items: readonly RateLimitStoreItem[], nowMs: number, table: StateTable): RateLimitDecision[] {
  return changeAll(items, nowMs, table, (algorithm, state, { policy, cost }) =>
    algorithm.refund(state, policy, nowMs, cost),
  );
}

/**
 * Takes each item's cost without deciding (RateLimitStore.charge): counted even past the limit, a debt later
 * consumes wait out; reports the key afterwards, as peek does. A blocked key stays blocked, and is charged all
 * the same (the units count once the block ends); a shadow item, which consumes nothing, is not charged, nor
 * is a cost of 0. A concurrency policy cannot be charged: refused before anything is written.
 */
export function chargeAll(items: readonly RateLimitStoreItem[], nowMs: number, table: StateTable): RateLimitDecision[] {
  checkChargeable(items);
  return changeAll(items, nowMs, table, (algorithm, state, { policy, cost, shadow }) =>
    cost > 0 && shadow !== true ? algorithm.charge(state, policy, nowMs, cost) : state,
  );
}

/** Refuses a charge of a concurrency policy (notChargeable says why), before any store is asked. */
export function checkChargeable(items: readonly { readonly policy: ResolvedPolicy }[]): void {
  const slots = items.find(({ policy }) => policy.algorithm === 'concurrency');
  if (slots !== undefined) throw new TypeError(notChargeable(slots.policy.name));
}

/** Changes each item's state (a refund or a charge) and reports the key afterwards, as peek does; a block stays. */
function changeAll(
  items: readonly RateLimitStoreItem[],
  nowMs: number,
  table: StateTable,
  change: (algorithm: Algorithm<unknown>, state: unknown, item: RateLimitStoreItem) => unknown,
): RateLimitDecision[] {
  return items.map((item) => {
    const { policy, key } = item;
    const [stored, untilMs] = unwrapBlock(table.get(key, policy.algorithm));
    const state = change(ALGORITHM_STEPS[kernelOf(policy)], stored, item);
    const peeked = peekState(policy, state, nowMs);
    const [value, ttlMs] = withBlock(state, peeked.resetMs, untilMs, nowMs);
    table.set(key, policy.algorithm, value, ttlMs);
    // Without a block the value stored is the state just peeked at.
    return value === state ? peeked : peekState(policy, value, nowMs);
  });
}

/** Blocks each item's key until `untilMs` (RateLimitService.block), or lifts its block (untilMs 0). */
export function blockAll(
  items: readonly Omit<RateLimitStoreItem, 'cost'>[],
  untilMs: number,
  nowMs: number,
  table: StateTable,
): void {
  for (const { policy, key } of items) {
    const [state] = unwrapBlock(table.get(key, policy.algorithm));
    const [value, ttlMs] = withBlock(state, peekState(policy, state, nowMs).resetMs, untilMs, nowMs);
    table.set(key, policy.algorithm, value, ttlMs);
  }
}
