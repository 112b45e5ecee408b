/**
 * DI token of the module's clock (a `Clock`). Override it in tests to drive time by hand.
 * @example Test.createTestingModule({ imports: [AppModule] }).overrideProvider(RATE_LIMIT_CLOCK).useValue(fakeClock)
 */
export const RATE_LIMIT_CLOCK = Symbol('RateLimitClock');
/** DI token of the module's stores: `{ rates, quotas }` (quotas: PostgreSQL when `postgres` is set). */
export const RATE_LIMIT_STORES = Symbol('RateLimitStores');
