import type { RateLimitStore } from './rate-limit-store.js';

/** The stores of the module: rate-limit policies use `rates`, quota policies `quotas` (PostgreSQL when set). */
export interface RateLimitStores {
  readonly rates: RateLimitStore;
  readonly quotas: RateLimitStore;
  /** Connections the module opened itself, closed on shutdown. */
  readonly owned: readonly { close(): Promise<unknown> | void }[];
}
