import { DecisionEngine, type EngineItem } from '../../lib/engine/decision-engine.js';
import type { RateLimitDecision } from '../../lib/policy/policy.types.js';
import { validatePolicy } from '../../lib/policy/validate-policy.js';
import type { EngineStore, EngineStoreItem } from '../../lib/stores/engine-store.js';
import { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { TEST_START_MS } from '../support/time.js';

// The engine decides on a store that decides in this process (consumeNow) without a Promise of the store's:
// the same decisions as consume(), and what consumeNow throws is a store failure like a rejected consume.

const policy = validatePolicy({ name: 'api', algorithm: 'fixed-window', limit: 2, window: '1m', failMode: 'open' });
const item = (key: string): EngineItem => ({ policy, key, cost: 1, failMode: 'open', order: 0 });

function engineOn(store: EngineStore): DecisionEngine {
  return new DecisionEngine({
    stores: { rates: store, quotas: store, owned: [] },
    clock: new FakeClock(TEST_START_MS),
    timeoutMs: 50,
    logger: new CapturingLogger(),
  });
}

describe('consumeNow: the in-process store decides without a Promise of its own', () => {
  it('decides through consumeNow, not consume, with the decisions consume gives', async () => {
    const store = new MemoryRateLimitStore({ clock: new FakeClock(TEST_START_MS) });
    const called: string[] = [];
    const consumeNow = store.consumeNow.bind(store);
    store.consumeNow = (items) => (called.push('now'), consumeNow(items));
    const engine = engineOn(store);
    const allowed = (await Promise.all([1, 2, 3].map(() => engine.decide([item('a')])))).map(
      (e) => e.decisions[0]?.allowed,
    );
    expect(allowed).toEqual([true, true, false]);
    expect(called).toEqual(['now', 'now', 'now']);
  });

  it('calls consume() where a subclass overrides it (counting calls, say)', async () => {
    const calls: number[] = [];
    class CountingStore extends MemoryRateLimitStore {
      override consume(items: readonly EngineStoreItem[]): Promise<RateLimitDecision[]> {
        calls.push(items.length);
        return super.consume(items);
      }
    }
    const engine = engineOn(new CountingStore({ clock: new FakeClock(TEST_START_MS) }));
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push((await engine.decide([item('a')])).decisions[0]?.allowed);
    expect(allowed).toEqual([true, true, false]);
    expect(calls).toEqual([1, 1, 1]);
  });

  it('applies the fail modes when consumeNow throws, as when consume rejects', async () => {
    const broken: EngineStore = {
      inProcess: true,
      consume: () => Promise.reject(new Error('down')),
      consumeNow: (_items: readonly EngineStoreItem[]): RateLimitDecision[] => {
        throw new Error('down');
      },
      peek: () => Promise.resolve([]),
      refund: () => Promise.resolve([]),
      reset: () => Promise.resolve(),
    } as unknown as EngineStore;
    const evaluation = await engineOn(broken).decide([item('a')]);
    // fail-open: left out, reported as failed
    expect(evaluation.failed?.map((f) => [f.policy, f.source])).toEqual([['api', 'fail-open']]);
  });
});
