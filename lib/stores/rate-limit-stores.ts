import type { EngineStore } from './engine-store.js';

/** The stores of the module: rate-limit policies use `rates`, quota policies `quotas` (PostgreSQL when set). */
export interface RateLimitStores {
  readonly rates: EngineStore;
  readonly quotas: EngineStore;
  /** Connections the module opened itself, closed on shutdown. */
  readonly owned: readonly { close(): Promise<unknown> | void }[];
}

/** Closes the connections the module opened (each once; one that fails to close does not keep the others open). */
export async function closeOwned(stores: RateLimitStores): Promise<void> {
  await Promise.allSettled(stores.owned.map(async (connection) => connection.close()));
}

/**
 * `make()`, or, when it throws, the connections the module opened closed before the error goes on: a start that
 * fails must not leave a connection that keeps the process (or a test run) alive.
 */
export function closedOnFailure<T>(stores: RateLimitStores, make: () => T): T {
  try {
    return make();
  } catch (error) {
    void closeOwned(stores);
    throw error;
  }
}
