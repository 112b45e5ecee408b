import { type ConfigurableModuleAsyncOptions, ConfigurableModuleBuilder } from '@nestjs/common';

import type { RateLimitModuleOptions } from './rate-limit.options.js';

export const {
  ConfigurableModuleClass: ConfigurableRateLimitModule,
  MODULE_OPTIONS_TOKEN: RATE_LIMIT_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RateLimitModuleOptions>().setClassMethodName('forRoot').build();

/**
 * What `useClass` and `useExisting` of RateLimitModule.forRootAsync name: a provider whose `create()` gives the
 * module's options.
 * @example class RateLimitConfig implements RateLimitModuleOptionsFactory { create() { return { redis: { url: process.env.REDIS_URL } }; } }
 */
export interface RateLimitModuleOptionsFactory {
  create(): RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
}

/**
 * Options of RateLimitModule.forRootAsync: `imports` and `inject`, and one of `useFactory`, `useClass` or
 * `useExisting` (a RateLimitModuleOptionsFactory).
 * @example RateLimitModule.forRootAsync({ inject: [ConfigService], useFactory: (c: ConfigService) => ({ redis: { url: c.get('REDIS_URL') } }) })
 */
export type RateLimitModuleAsyncOptions = ConfigurableModuleAsyncOptions<RateLimitModuleOptions, 'create'>;
