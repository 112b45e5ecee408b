import { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import { validatePolicy } from '../../lib/policy/validate-policy.js';
import type { RateLimitDecision, RateLimitPolicy } from '../../lib/policy/policy.types.js';
import { FakeClock } from '../../lib/testing/index.js';
import { TEST_START_MS } from './time.js';

/** One policy on one key of a memory store, driven by a fake clock: the shape of most algorithm tests. */
export function limiter(policy: RateLimitPolicy, startMs = TEST_START_MS) {
  const clock = new FakeClock(startMs);
  const store = new MemoryRateLimitStore({ clock });
  const resolved = validatePolicy(policy);
  const one = async (p: Promise<RateLimitDecision[]>): Promise<RateLimitDecision> => nth(await p, 0);
  return {
    clock,
    store,
    policy: resolved,
    consume: (cost = 1, key = 'k') => one(store.consume([{ policy: resolved, key, cost }])),
    peek: (key = 'k') => one(store.peek([{ policy: resolved, key }])),
    refund: (amount: number, key = 'k') => one(store.refund([{ policy: resolved, key, cost: amount }])),
    charge: (amount: number, key = 'k') => one(store.charge([{ policy: resolved, key, cost: amount }])),
    async consumeTimes(n: number, cost = 1): Promise<RateLimitDecision[]> {
      const out: RateLimitDecision[] = [];
      for (let i = 0; i < n; i++) out.push(await this.consume(cost));
      return out;
    },
  };
}

/** Element `i` of `array`, for a test that counts on it: its absence fails the test, naming the index. */
export function nth<T>(array: readonly T[], i: number): T {
  const element = array[i];
  if (element === undefined) throw new Error(`expected an element ${i}, but the array has ${array.length}`);
  return element;
}
