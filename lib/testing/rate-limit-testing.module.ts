import { type DynamicModule, Module } from '@nestjs/common';

import { RATE_LIMIT_CLOCK } from '../rate-limit.constants.js';
import { RateLimitModule } from '../rate-limit.module.js';
import { MemoryRateLimitStore } from '../stores/memory/memory.store.js';
import type { RateLimitModuleOptions } from '../rate-limit.options.js';
import { FakeClock } from './fake-clock.js';

/**
 * The rate-limit module for tests: RateLimitModule on the in-memory store (unless `options` name another),
 * its time from a FakeClock that the test injects and moves. Each forRoot() has a clock and a store of its own,
 * so one app per test file (or per test) starts from nothing.
 * @example
 * const moduleRef = await Test.createTestingModule({ imports: [RateLimitTestingModule.forRoot()], controllers: [AppController] }).compile();
 * moduleRef.get(FakeClock).advance(60_000);
 */
@Module({})
export class RateLimitTestingModule {
  static forRoot(options: RateLimitModuleOptions = {}): DynamicModule {
    const clock = new FakeClock();
    // The memory store, given as such: a test is told nothing about limits being per process.
    const onMemory = options.redis === undefined && options.postgres === undefined && options.store === undefined;
    const root = RateLimitModule.forRoot(
      onMemory ? { ...options, store: new MemoryRateLimitStore({ clock, keyPrefix: options.keyPrefix }) } : options,
    );
    return {
      ...root,
      // After the module's own providers: the fake clock replaces the system clock for the store and limiter.
      providers: [
        ...(root.providers ?? []),
        { provide: FakeClock, useValue: clock },
        { provide: RATE_LIMIT_CLOCK, useValue: clock },
      ],
      exports: [...(root.exports ?? []), FakeClock],
    };
  }
}
