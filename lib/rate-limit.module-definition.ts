import { ConfigurableModuleBuilder } from '@nestjs/common';

import type { RateLimitModuleOptions } from './rate-limit.options.js';

export const {
  ConfigurableModuleClass: ConfigurableRateLimitModule,
  MODULE_OPTIONS_TOKEN: RATE_LIMIT_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RateLimitModuleOptions>().setClassMethodName('forRoot').build();
