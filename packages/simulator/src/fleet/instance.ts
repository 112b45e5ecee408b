import { DecisionEngine, type EngineItem, sourceAt } from '../../../../lib/engine/decision-engine.js';
import type { Clock } from '../../../../lib/util/clock.js';
import type { LeaseMode } from './options.js';
import type { VirtualStore } from './virtual-store.js';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Real time (ms) a store call may take before the engine gives up on it. A call takes virtual time only, but
 * stays unanswered in real time while the run takes the events before its reply: far longer than a real
 * store's timeout on a busy machine, and never long enough to matter.
 */
const TIMEOUT_MS = 600_000;

/**
 * One instance of the fleet: the library's own DecisionEngine (with its LeaseBook and cache of denials) on the
 * shared store in virtual time. With lease 'off' its policy has no lease: every request that the cache of
 * denials does not refuse is a store call.
 */
export class FleetInstance {
  readonly engine: DecisionEngine;
  private readonly items: readonly EngineItem[];

  constructor(
    readonly index: number,
    item: EngineItem,
    growth: LeaseMode,
    store: VirtualStore,
    clock: Clock,
  ) {
    const link = store.linkOf(index);
    const stores = { rates: link, quotas: link, owned: [] };
    // The cache of denials in virtual time too: in real time, a loaded machine made the same seed admit differently.
    const realNow = () => clock.now();
    this.engine = new DecisionEngine({ stores, clock, timeoutMs: TIMEOUT_MS, logger: quiet, realNow });
    this.items = [growth === 'off' ? { ...item, policy: { ...item.policy, lease: undefined } } : item];
  }

  /** Listens to the store's feed of changes, as the module does at start. */
  start(): Promise<void> {
    return this.engine.feed.start();
  }

  /**
   * A request, now: the engine decides it. `spent` is told when its lease admitted it (at the virtual time it
   * did, once the engine went on: a request may first wait for a take of its key); the store's admissions are
   * counted where the store decides them.
   */
  arrive(spent: (instance: number) => void, failed: (error: unknown) => void): void {
    this.engine.decide(this.items).then((evaluation) => {
      if (evaluation.decisions[0]?.allowed === true && sourceAt(evaluation, 0) === 'lease') spent(this.index);
    }, failed);
  }

  dispose(): Promise<void> {
    return this.engine.dispose();
  }
}
