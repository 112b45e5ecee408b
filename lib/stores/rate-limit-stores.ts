import type { EngineStore } from './engine-store.js';

/** The stores of the module: rate-limit policies use `rates`, quota policies `quotas` (PostgreSQL when set). */
export interface RateLimitStores {
  readonly rates: EngineStore;
  readonly quotas: EngineStore;
  /** Connections the module opened itself, closed on shutdown. */
  readonly owned: readonly { close(): Promise<unknown> | void }[];
}
