import {
  type DynamicModule,
  Global,
  Inject,
  Module,
  type OnApplicationShutdown,
  type OnModuleInit,
  Optional,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, DiscoveryModule } from '@nestjs/core';

import { systemClock } from '../util/clock.js';
import { createStores, storesReady } from './module-stores.js';
import { RATE_LIMIT_CLOCK, RATE_LIMIT_STORES } from './rate-limit.constants.js';
import { RateLimitExceptionFilter } from './rate-limit.exception-filter.js';
import { GlobalRateLimitGuard, RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitInterceptor } from './rate-limit.interceptor.js';
import {
  ConfigurableRateLimitModule,
  RATE_LIMIT_OPTIONS,
  type RateLimitModuleAsyncOptions,
} from './rate-limit.module-definition.js';
import type { RateLimitModuleOptions } from './rate-limit.options.js';
import { RateLimitService } from './rate-limit.service.js';
import { RateLimiter } from './rate-limiter.js';
import { RateLimitStore } from '../stores/rate-limit-store.js';
import type { RateLimitStores } from '../stores/rate-limit-stores.js';

/** The connections and stores the module made; RateLimitStore and RATE_LIMIT_STORES are derived from them. */
const CREATED_STORES = Symbol('nest-rate-limit:created-stores');

/** What a feature module that imports RateLimitModule may inject: the root module's own instances. */
const FEATURE_EXPORTS = [RateLimitService, RateLimitStore, RateLimitGuard, RateLimitInterceptor] as const;
/** The root module's instances of FEATURE_EXPORTS, in that order, for the bare RateLimitModule to hand on. */
const ROOT_INSTANCES = Symbol('nest-rate-limit:root-instances');

/**
 * The module forRoot and forRootAsync make (global, once per application): the store, the limiter,
 * RateLimitService, the guard as APP_GUARD (inactive with `global: false`) and the exception filter.
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
    { provide: ROOT_INSTANCES, useFactory: (...instances: unknown[]) => instances, inject: [...FEATURE_EXPORTS] },
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
    ROOT_INSTANCES,
  ],
})
class RateLimitRootModule extends ConfigurableRateLimitModule implements OnModuleInit, OnApplicationShutdown {
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

const NO_ROOT =
  'nest-rate-limit: RateLimitModule is imported, but no module of the application calls RateLimitModule.forRoot() ' +
  'or forRootAsync(): call it once, in the root module (AppModule); feature modules may then import RateLimitModule ' +
  'or nothing (RateLimitService is global)';

/**
 * Rate limiting for a Nest application. `RateLimitModule.forRoot(options)` (or `forRootAsync`), once in the root
 * module, registers the store (Redis, PostgreSQL or in memory), RateLimitService, and the guard as APP_GUARD
 * (inactive with `global: false`); the limiter attaches its interceptor to the handlers whose user-keyed policies
 * must wait for their own guards. Global: RateLimitService can be injected anywhere. A feature module may also
 * import the bare `RateLimitModule`, as Nest habit has it: it hands on the root module's instances.
 * @example RateLimitModule.forRootAsync({ inject: [ConfigService], useFactory: (c) => ({ redis: { url: c.get('REDIS_URL') } }) })
 */
@Module({
  providers: FEATURE_EXPORTS.map((token, index) => ({
    provide: token,
    useFactory: (root?: readonly unknown[]) => {
      if (root === undefined) throw new Error(NO_ROOT);
      return root[index];
    },
    inject: [{ token: ROOT_INSTANCES, optional: true }],
  })),
  exports: [...FEATURE_EXPORTS],
})
export class RateLimitModule {
  /** A feature module's import of the bare module stops the start when no root module configured it. */
  constructor(@Optional() @Inject(ROOT_INSTANCES) root?: readonly unknown[]) {
    if (root === undefined) throw new Error(NO_ROOT);
  }

  /** The module with its options, once in the root module. */
  static forRoot(options: RateLimitModuleOptions): DynamicModule {
    return RateLimitRootModule.forRoot(options);
  }

  /** The module with options from a factory, a class or an existing provider, once in the root module. */
  static forRootAsync(options: RateLimitModuleAsyncOptions): DynamicModule {
    return RateLimitRootModule.forRootAsync(options);
  }
}
