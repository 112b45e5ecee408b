import type { Clock } from '../util/clock.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import { MemoryRateLimitStore } from '../stores/memory/memory.store.js';
import { type EngineItem, type Evaluation, NOTHING } from './evaluation.js';

/**
 * The limit a 'local' policy enforces in one process while its store fails: its `localLimit`, else
 * `ceil(limit / instances)` of the request's limit; never more than that limit.
 */
export function localLimitOf(policy: Pick<ResolvedPolicy, 'limit' | 'localLimit'>, instances: number): number {
  return Math.min(policy.limit, policy.localLimit ?? Math.ceil(policy.limit / instances));
}

/**
 * The insurance of `failMode: 'local'`: while a store fails (an error, a timeout, the breaker open), the
 * 'local' items of a request are decided together, all-or-nothing, on one in-process MemoryRateLimitStore
 * (made at the first outage), with the same algorithm, window and key and the limit cut to the local limit.
 * Once the store answers, decisions go to it again: what was counted here is not carried back (the store
 * cannot know what each process admitted); it stays here until it expires, so the concurrency slots taken here are
 * given back here.
 */
export class LocalFallback {
  private memory: MemoryRateLimitStore | undefined;
  /** The local variant of each policy (or per-request variant of one) that fell back. */
  private readonly variants = new WeakMap<ResolvedPolicy, ResolvedPolicy>();

  constructor(
    private readonly clock: Clock,
    readonly instances: number,
  ) {}

  /** The in-process store of local decisions, made on first use. */
  get store(): MemoryRateLimitStore {
    return (this.memory ??= new MemoryRateLimitStore({ clock: this.clock }));
  }

  /** The local limit of `policy` (with the request's limit) in this process. */
  limitOf(policy: Pick<ResolvedPolicy, 'limit' | 'localLimit'>): number {
    return localLimitOf(policy, this.instances);
  }

  /**
   * `policy` with its local limit: `limit` becomes the local limit, and the capacity of a token bucket or
   * GCRA (its burst) is scaled by the same ratio, rounded up (at least 1), so the bucket keeps its shape.
   * Same name and id: keyed like the store, and the decision's headers name the policy with its local limit.
   */
  policyOf(policy: ResolvedPolicy): ResolvedPolicy {
    let local = this.variants.get(policy);
    if (local === undefined) {
      const limit = this.limitOf(policy);
      const capacity =
        policy.capacity === policy.limit ? limit : Math.max(1, Math.ceil((policy.capacity * limit) / policy.limit));
      local = Object.freeze({ ...policy, limit, capacity });
      this.variants.set(policy, local);
    }
    return local;
  }

  /**
   * Decides the 'local' items among `items` (whose store failed) together on the in-process store; the others
   * (fail open) are left out. NOTHING when no item fails local. Its source is 'local': whatever gives these
   * units back (a refund by outcome, a released concurrency slot, a compensation) finds the in-process store by
   * it (DecisionEngine.storeOf), never the shared one, which never counted them. The engine answers these decisions as it
   * answers the store's (DecisionEngine's `decided`: the concurrency waits cut, the slots counted).
   */
  async decide(items: readonly EngineItem[]): Promise<Evaluation> {
    if (!items.some((item) => item.failMode === 'local')) return NOTHING;
    const local = items
      .filter((item) => item.failMode === 'local')
      // a lease's take asks the local store for its cost alone: units it counted must not outlive the outage
      .map((item) => ({ ...item, policy: this.policyOf(item.policy), upTo: undefined }));
    return { items: local, decisions: await this.store.consume(local), source: 'local' };
  }
}
