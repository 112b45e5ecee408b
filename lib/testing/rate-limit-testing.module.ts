import { type DynamicModule, Module } from '@nestjs/common';

import { RATE_LIMIT_CLOCK } from '../nest/rate-limit.constants.js';
import { RateLimitModule } from '../nest/rate-limit.module.js';
import { MemoryRateLimitStore } from '../stores/memory/memory.store.js';
import type { RateLimitModuleOptions } from '../nest/rate-limit.options.js';
import { FakeClock } from './fake-clock.js';

/**
 * The rate-limit module for tests: RateLimitModule on the in-memory store (unless `options` name another),
 * its time from a FakeClock that the test injects and moves. Each forRoot() has a clock and a store of its own,
 * so one app per test file (or per test) starts from nothing.
 * @example
 * const moduleRef = await Test.createTestingModule({ imports: [RateLimitTestingModule.forRoot()], controllers: [AppController] }).compile();
 * moduleRef.get(FakeClock).advance(60_000);
 */
/** The memory store of a test, keyed as the module's own would be. */
const memoryStore = ({ keyPrefix, identitySecret, readableKeys }: RateLimitModuleOptions, clock: FakeClock) =>
  new MemoryRateLimitStore({ clock, keyPrefix, identitySecret, readableKeys });

/** The options without those the memory store took (the module refuses them beside a store of yours). */
function withoutIdentityOptions(options: RateLimitModuleOptions): RateLimitModuleOptions {
  const { identitySecret: _secret, readableKeys: _readable, ...rest } = options;
  return rest;
}

@Module({})
export class RateLimitTestingModule {
  static forRoot(options: RateLimitModuleOptions = {}): DynamicModule {
    const clock = new FakeClock();
    // The memory store, given as such: a test is told nothing about limits being per process.
    const onMemory = options.redis === undefined && options.postgres === undefined && options.store === undefined;
    const root = RateLimitModule.forRoot(
      onMemory ? { ...withoutIdentityOptions(options), store: memoryStore(options, clock) } : options,
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
