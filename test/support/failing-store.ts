import type { RateLimitDecision } from '../../lib/policy/policy.types.js';
import type { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import type { RateLimitStore, RateLimitStoreItem } from '../../lib/stores/rate-limit-store.js';

/** How a FailingStore answers: as its memory store does, with an error at once, or never (a hung server). */
export type StoreHealth = 'answers' | 'fails' | 'hangs';

/**
 * A real MemoryRateLimitStore behind a switch, for outage tests without a server: while `health` is 'answers'
 * every call goes to the memory store; 'fails' rejects every call (ping included) at once, 'hangs' never settles
 * (the module's timeout and breaker deal with it). Not `inProcess`, so the module treats it as a remote store:
 * timeout, circuit breaker, deny cache. `calls` counts the calls that reached the memory store, by operation.
 */
export class FailingStore implements RateLimitStore {
  health: StoreHealth = 'answers';
  readonly calls = { consume: 0, refund: 0, peek: 0 };

  constructor(readonly memory: MemoryRateLimitStore) {}

  consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.call(() => {
      this.calls.consume++;
      return this.memory.consume(items);
    });
  }

  peek(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<RateLimitDecision[]> {
    return this.call(() => {
      this.calls.peek++;
      return this.memory.peek(items);
    });
  }

  refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    return this.call(() => {
      this.calls.refund++;
      return this.memory.refund(items);
    });
  }

  reset(items: readonly Omit<RateLimitStoreItem, 'cost'>[]): Promise<void> {
    return this.call(() => this.memory.reset(items));
  }

  ping(): Promise<unknown> {
    return this.call(async () => 'PONG');
  }

  private call<T>(answer: () => Promise<T>): Promise<T> {
    if (this.health === 'fails') return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    if (this.health === 'hangs') return new Promise<T>(() => undefined);
    return answer();
  }
}
