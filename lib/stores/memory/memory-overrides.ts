import { type OverrideStorage, overrideField, type StoredOverride } from '../overrides.js';
import type { StoredIdentities } from '../storage-key.js';

/** The in-memory store's overrides: in this process, as its state is. */
export class MemoryOverrides implements OverrideStorage {
  private readonly kept = new Map<string, StoredOverride>();

  constructor(private readonly identities: StoredIdentities) {}

  identityOf(shape: string, identity: string): string {
    return this.identities.of(shape, identity);
  }

  put(override: StoredOverride): Promise<void> {
    this.kept.set(overrideField(override.policy, override.identity), override);
    return Promise.resolve();
  }

  remove(policy: string, identity: string): Promise<boolean> {
    return Promise.resolve(this.kept.delete(overrideField(policy, identity)));
  }

  /** Removes every override (resetAll); returns how many there were. */
  clear(): number {
    const removed = this.kept.size;
    this.kept.clear();
    return removed;
  }

  list(): Promise<StoredOverride[]> {
    return Promise.resolve([...this.kept.values()]);
  }
}
