import type { Logger } from '../util/logger.js';

import type { DecisionEngine } from '../engine/decision-engine.js';
import type { ItemOverride } from '../engine/evaluation.js';
import { overrideName, storedOverride } from '../engine/overrides/override-book.js';
import { checkOverrideChange, type RateLimitOverride } from '../policy/override.js';
import { RateLimitPolicyError } from '../policy/policy.errors.js';
import type { ResolvedPolicy } from '../policy/policy.types.js';
import type { OverrideStorage, StoredOverride } from '../stores/overrides.js';
import { withTimeout } from '../stores/store-timeout.js';
import type { ServiceArguments } from './service-arguments.js';

/** An override as RateLimitService returns it: dates as Dates, every field present. */
export const publicOverride = (o: StoredOverride): RateLimitOverride => ({
  policy: o.policy,
  identity: o.identity,
  limit: o.limit,
  burst: o.burst,
  until: o.until === undefined ? undefined : new Date(o.until),
  reason: o.reason,
  shadow: o.shadow,
  setAt: new Date(o.setAt),
});

/** How an override's values read in the log. */
function described(o: StoredOverride): string {
  const values = [
    o.limit === undefined ? undefined : `limit ${o.limit}`,
    o.burst === undefined ? undefined : `burst ${o.burst}`,
  ].filter((v) => v !== undefined);
  const until = o.until === undefined ? 'until removed' : `until ${new Date(o.until).toISOString()}`;
  const reason = o.reason === undefined ? 'no reason given' : `reason ${JSON.stringify(o.reason)}`;
  return `${values.join(', ')}${o.shadow ? ' (dry run: decisions keep the declared limit)' : ''}, ${until}, ${reason}`;
}

/**
 * RateLimitService's overrides of a policy's limit for one identity: checked, kept in the policy's store (the
 * identity as its keyed hash), in force here at once and announced on the feed of changes, so that every
 * instance reads them again; each change logged once, with the stored hash, never the identity.
 */
export class ServiceOverrides {
  constructor(
    private readonly engine: DecisionEngine,
    private readonly args: ServiceArguments,
    private readonly logger: Logger,
  ) {}

  private get timeoutMs(): number {
    return this.engine.timeoutMs;
  }

  async override(policy: unknown, identity: unknown, change: unknown): Promise<RateLimitOverride> {
    const p = this.named(policy, 'override');
    const key = this.args.key(identity, p);
    const checked = checkOverrideChange(p, change);
    const storage = this.storageOf(p, 'override');
    const stored = storedOverride(p, storage.identityOf(p.shape, key), checked, this.engine.now());
    await withTimeout(() => storage.put(stored), this.timeoutMs);
    this.engine.overrides.set(stored);
    await this.engine.feed.overridesChanged();
    this.logger.log(`Override of policy "${stored.policy}" for identity ${stored.identity} set: ${described(stored)}`);
    return publicOverride(stored);
  }

  async removeOverride(policy: unknown, identity: unknown): Promise<boolean> {
    const p = this.named(policy, 'removeOverride');
    const key = this.args.key(identity, p);
    const storage = this.storageOf(p, 'removeOverride');
    const name = overrideName(p);
    const stored = storage.identityOf(p.shape, key);
    const removed = await withTimeout(() => storage.remove(name, stored), this.timeoutMs);
    this.engine.overrides.drop(name, stored);
    await this.engine.feed.overridesChanged();
    if (removed) this.logger.log(`Override of policy "${name}" for identity ${stored} removed`);
    return removed;
  }

  /** The overrides in force now, of `policy` when given, as the stores keep them. */
  async overrides(policy?: unknown): Promise<RateLimitOverride[]> {
    const name = policy === undefined ? undefined : overrideName(this.named(policy, 'overrides'));
    const { storages } = this.engine.overrides;
    const lists = await Promise.all(storages.map((s) => withTimeout(() => s.list(), this.timeoutMs)));
    const nowMs = this.engine.now();
    return lists
      .flat()
      .filter((o) => (name === undefined || o.policy === name) && (o.until === undefined || o.until > nowMs))
      .sort((a, b) => a.policy.localeCompare(b.policy) || a.identity.localeCompare(b.identity))
      .map(publicOverride);
  }

  /**
   * An item of the service's own decisions under its key's override, if one is in force: its limit applied (a
   * dry run keeps the declared one, and the engine peeks what the override would have answered).
   */
  applied<T extends { readonly policy: ResolvedPolicy; readonly key: string }>(
    item: T,
  ): T & { override?: ItemOverride } {
    const o = this.engine.overrides.of(item.policy, item.key);
    if (o === undefined) return item;
    const limit = o.limit ?? item.policy.limit;
    const variant = this.engine.withLimit(item.policy, limit, o.burst);
    return {
      ...item,
      policy: o.shadow ? item.policy : variant,
      override: { shadow: o.shadow, limit, policy: variant },
    };
  }

  /** A declared policy, by its name (an override names the policy whose requests it changes). */
  private named(policy: unknown, method: string): ResolvedPolicy {
    if (typeof policy !== 'string') {
      throw new RateLimitPolicyError(
        `RateLimitService.${method} takes the name of a declared policy, got ${typeof policy}`,
        { field: 'policy', where: `RateLimitService.${method}` },
      );
    }
    return this.args.lookup(policy);
  }

  /** Where the overrides of `policy` are kept: its store must keep them. */
  private storageOf(policy: ResolvedPolicy, method: string): OverrideStorage {
    const storage = this.engine.storeOf(policy).overrides;
    if (storage !== undefined) return storage;
    throw new RateLimitPolicyError(
      `its store (${this.engine.storeOf(policy).constructor.name}) keeps no overrides: the module's memory, Redis ` +
        'and PostgreSQL stores do',
      { policy: policy.name, where: `RateLimitService.${method}` },
    );
  }
}
