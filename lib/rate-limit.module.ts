import { Global, Inject, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, DiscoveryModule } from '@nestjs/core';

import { systemClock } from './clock.js';
import { createStores, storesReady } from './module-stores.js';
import { RATE_LIMIT_CLOCK, RATE_LIMIT_STORES } from './rate-limit.constants.js';
import { RateLimitExceptionFilter } from './rate-limit.exception.js';
import { GlobalRateLimitGuard, RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitInterceptor } from './rate-limit.interceptor.js';
import { ConfigurableRateLimitModule, RATE_LIMIT_OPTIONS } from './rate-limit.module-definition.js';
import { RateLimitService } from './rate-limit.service.js';
import { RateLimiter } from './rate-limiter.js';
import { RateLimitStore } from './stores/rate-limit-store.js';
import type { RateLimitStores } from './stores/rate-limit-stores.js';

/** The connections and stores the module made; RateLimitStore and RATE_LIMIT_STORES are derived from them. */
const CREATED_STORES = Symbol('nest-rate-limit:created-stores');

/**
 * Rate limiting for a Nest application: registers the store (Redis, PostgreSQL or in memory),
 * RateLimitService, and the guard as APP_GUARD (inactive with `global: false`); the limiter attaches its
 * interceptor to the handlers whose user-keyed policies must wait for their own guards. Global: RateLimitService can be injected anywhere.
 * @example RateLimitModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ redis: { url: c.get('REDIS_URL') } }) })
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: RATE_LIMIT_CLOCK, useValue: systemClock },
    { provide: CREATED_STORES, useFactory: createStores, inject: [RATE_LIMIT_OPTIONS, RATE_LIMIT_CLOCK] },
    { provide: RateLimitStore, useFactory: (created: RateLimitStores) => created.rates, inject: [CREATED_STORES] },
    {
      // Built on the RateLimitStore provider, so that overriding it (in a test, say) reaches the limiter.
      provide: RATE_LIMIT_STORES,
      useFactory: (created: RateLimitStores, rates: RateLimitStore): RateLimitStores => ({
        rates,
        quotas: created.quotas === created.rates ? rates : created.quotas,
        owned: created.owned,
      }),
      inject: [CREATED_STORES, RateLimitStore],
    },
    RateLimiter,
    RateLimitService,
    RateLimitGuard,
    RateLimitInterceptor,
    { provide: APP_GUARD, useClass: GlobalRateLimitGuard },
    { provide: APP_FILTER, useClass: RateLimitExceptionFilter },
  ],
  exports: [
    RateLimitService,
    RateLimitStore,
    RATE_LIMIT_STORES,
    RATE_LIMIT_CLOCK,
    RateLimiter,
    RateLimitGuard,
    RateLimitInterceptor,
  ],
})
export class RateLimitModule extends ConfigurableRateLimitModule implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(RATE_LIMIT_STORES) private readonly stores: RateLimitStores) {
    super();
  }

  /** Waits, briefly, for the module's own Redis connection and loads the script (storesReady says why). */
  async onModuleInit(): Promise<void> {
    await storesReady(this.stores);
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.stores.owned.map((connection) => connection.close()));
  }
}
