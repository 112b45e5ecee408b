import { Controller, Get } from '@nestjs/common';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions, type RateLimitPolicy } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';

// Regression: a misspelt optional field was ignored, so the policy held, but not as declared: `failmode:
// 'closed'` on a login route failed open when the store was down, `bursts: 20` gave a burst of the limit, and
// `defualts` in the module's options left every route without its default policies. Object literals in
// TypeScript are checked for excess fields; a policy built in a variable, read from configuration or written in
// JavaScript is not.

/** What a policy read from a configuration file looks like to the compiler: nothing it can check. */
const fromConfig = (policy: Record<string, unknown>) => policy as unknown as RateLimitPolicy;

function controllerWith(policy: RateLimitPolicy) {
  @Controller('auth')
  class AuthController {
    @Get('login')
    @RateLimit(policy)
    login() {
      return 'ok';
    }
  }
  return AuthController;
}

describe('a misspelt field stops the start, naming it and what it was probably meant to be', () => {
  it.each([
    [{ algorithm: 'gcra', limit: 5, window: '1m', failmode: 'closed' }, 'failmode', 'did you mean "failMode"?'],
    [{ algorithm: 'token-bucket', limit: 5, window: '1s', bursts: 20 }, 'bursts', 'did you mean "burst"?'],
    [
      { algorithm: 'quota', limit: 100, period: 'month', timezone: 'Europe/Paris' },
      'timezone',
      'did you mean "timeZone"?',
    ],
    [{ algorithm: 'fixed-window', limit: 5, window: '1m', keyBy: 'ip' }, 'keyBy', 'did you mean "key"?'],
    [
      { algorithm: 'fixed-window', limit: 5, window: '1m', description: 'login' },
      'description',
      'known: name, algorithm, limit',
    ],
  ])('in a @RateLimit policy (%j)', async (policy, field, hint) => {
    const AuthController = controllerWith(fromConfig(policy));
    const started = createApp('express', { imports: [RateLimitModule.forRoot({})], controllers: [AuthController] });
    await expect(started).rejects.toThrow(
      new RegExp(
        `\\(declared on AuthController\\.login\\), field "${field}": is not a policy field \\(.*${hint.replace(/[()?.]/g, '\\$&')}`,
      ),
    );
  });

  it.each([
    [{ defualts: [{ algorithm: 'gcra', limit: 5, window: '1m' }] }, 'defualts', 'did you mean "defaults"?'],
    [
      { postgres: { connectionString: 'postgres://127.0.0.1/test', migrte: true } },
      'postgres.migrte',
      'did you mean "migrate"?',
    ],
    [{ redis: { url: 'redis://127.0.0.1:6379', option: { db: 2 } } }, 'redis.option', 'did you mean "options"?'],
  ])('in the module options (%j)', async (options, name, hint) => {
    const started = createApp('express', { imports: [RateLimitModule.forRoot(options as RateLimitModuleOptions)] });
    await expect(started).rejects.toThrow(
      `nest-rate-limit: option "${name}" is not an option of RateLimitModule (${hint})`,
    );
  });

  it('in the module options before anything connects (a migration, a pool of its own)', async () => {
    const options = {
      postgres: { connectionString: 'postgres://postgres@127.0.0.1:1/test', migrate: true },
      defualts: [],
    } as unknown as RateLimitModuleOptions;
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(options)] })).rejects.toThrow(
      'nest-rate-limit: option "defualts" is not an option of RateLimitModule (did you mean "defaults"?)',
    );
  });

  it('and a redis or postgres option that is not an object stops it too', async () => {
    const redis = { redis: 'redis://127.0.0.1:6379' } as unknown as RateLimitModuleOptions;
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(redis)] })).rejects.toThrow(
      'nest-rate-limit: option "redis" must be an object, got "redis://127.0.0.1:6379"',
    );
    const postgres = { postgres: null } as unknown as RateLimitModuleOptions;
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(postgres)] })).rejects.toThrow(
      'nest-rate-limit: option "postgres" must be an object, got null',
    );
  });

  it('and the fields as declared still start', async () => {
    const policy = fromConfig({ algorithm: 'gcra', limit: 5, window: '1m', failMode: 'closed', burst: 10 });
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ defaults: [], timeout: 100, ipv6Prefix: 56, trustProxy: 'loopback' })],
      controllers: [controllerWith(policy)],
    });
    await app.close();
  });
});
