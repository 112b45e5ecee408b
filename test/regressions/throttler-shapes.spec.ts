import { Controller, Get } from '@nestjs/common';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions, type RateLimitPolicy } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';

// Issue 19: an app ported from @nestjs/throttler keeps its shapes at first: `forRoot([{ ttl: 60000, limit: 10 }])`
// (an array of throttlers) and `ttl` in a policy. The start stopped with `options must be an object, got an
// array` and `field "ttl": is not a policy field (known: name, algorithm, …)`, which say what is wrong but not
// what to write; now each says what the throttler's shape is here (docs/migration-from-throttler.md).

/** What throttler's configuration looks like to this module's types: nothing they accept. */
const throttlerShaped = <T>(value: unknown) => value as T;

const ARRAY_HINT =
  'nest-rate-limit: options must be an object, got an array ' +
  '(RateLimitModule.forRoot takes an options object: put the policies in `defaults`)';
const TTL_HINT =
  'field "ttl": is not a policy field ' +
  `(did you mean "window"? @nestjs/throttler's ttl is a policy's window: ms, or a duration like '1m')`;

describe("the start names @nestjs/throttler's shapes and what they are here", () => {
  it('an array of throttlers given to forRoot', async () => {
    const options = throttlerShaped<RateLimitModuleOptions>([{ ttl: 60_000, limit: 10 }]);
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(options)] })).rejects.toThrow(ARRAY_HINT);
  });

  it('an array of throttlers returned by the factory of forRootAsync', async () => {
    const useFactory = () => throttlerShaped<RateLimitModuleOptions>([{ ttl: 60_000, limit: 10 }]);
    await expect(createApp('express', { imports: [RateLimitModule.forRootAsync({ useFactory })] })).rejects.toThrow(
      ARRAY_HINT,
    );
  });

  it('ttl in a default policy', async () => {
    const defaults = [
      throttlerShaped<RateLimitPolicy>({ name: 'default', algorithm: 'fixed-window', ttl: 60_000, limit: 10 }),
    ];
    await expect(createApp('express', { imports: [RateLimitModule.forRoot({ defaults })] })).rejects.toThrow(
      `Invalid rate-limit policy "default" (declared on RateLimitModule defaults), ${TTL_HINT}`,
    );
  });

  it('ttl in a @RateLimit policy, naming where it is declared', async () => {
    const policy = throttlerShaped<RateLimitPolicy>({
      name: 'login',
      algorithm: 'sliding-window-log',
      limit: 5,
      ttl: 60_000,
    });
    @Controller('auth')
    class AuthController {
      @Get('login')
      @RateLimit(policy)
      login() {
        return 'ok';
      }
    }
    await expect(
      createApp('express', { imports: [RateLimitModule.forRoot({})], controllers: [AuthController] }),
    ).rejects.toThrow(`Invalid rate-limit policy "login" (declared on AuthController.login), ${TTL_HINT}`);
  });

  it('other shapes keep their messages: an option that is not an object, a misspelt field', async () => {
    const redis = throttlerShaped<RateLimitModuleOptions>({ redis: ['redis://127.0.0.1:6379'] });
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(redis)] })).rejects.toThrow(
      /^nest-rate-limit: option "redis" must be an object, got an array$/,
    );
    const defaults = [
      throttlerShaped<RateLimitPolicy>({ algorithm: 'fixed-window', limit: 10, window: 1000, ttls: 1 }),
    ];
    await expect(createApp('express', { imports: [RateLimitModule.forRoot({ defaults })] })).rejects.toThrow(
      /field "ttls": is not a policy field \(known: name, algorithm, /,
    );
  });
});
