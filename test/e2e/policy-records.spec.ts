import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';

import { RateLimit, type RateLimitDuration, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { storeOptions, storeServers } from '../support/store-options.js';

/** A version of the app: its one policy, `per-user`, over `window`. */
function version(window: RateLimitDuration) {
  @Controller()
  class UserController {
    @Get('user')
    @RateLimit({ name: 'per-user', algorithm: 'fixed-window', limit: 5, window, key: 'ip' })
    user() {
      return 'ok';
    }
  }
  return UserController;
}

async function start(options: RateLimitModuleOptions, window: RateLimitDuration) {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [version(window)],
  }).compile();
  const logger = new CapturingLogger();
  const app: INestApplication = moduleRef.createNestApplication({ logger });
  await app.init();
  return { app, logger };
}

const servers = storeServers();

describe.each(['redis', 'postgres'] as const)('the policies each instance records in the %s store', (store) => {
  it('reports, once at start, a version beside it that gives a policy another shape', async () => {
    const options = storeOptions(store, servers);
    const first = await start(options, '1m');
    const second = await start(options, '1h');
    try {
      expect(first.logger.warnings.filter((w) => w.includes('per-user'))).toEqual([]);
      expect(second.logger.warnings.filter((w) => w.includes('per-user'))).toEqual([
        expect.stringMatching(
          /^Policy "per-user" has the shape fw1h here, and fw1m \(recorded .*\) on instances of another version/,
        ),
      ]);
    } finally {
      await Promise.all([first.app.close(), second.app.close()]);
    }
  });

  it('reports instances whose identity secret is another', async () => {
    const options = storeOptions(store, servers);
    const first = await start({ ...options, identitySecret: 'the first secret, 32 characters!' }, '1m');
    const second = await start({ ...options, identitySecret: 'the second secret, 32 characters' }, '1m');
    try {
      expect(second.logger.warnings).toContainEqual(expect.stringMatching(/^Instances with another identitySecret/));
      expect(first.logger.warnings.some((w) => w.includes('identitySecret'))).toBe(false);
    } finally {
      await Promise.all([first.app.close(), second.app.close()]);
    }
  });
});
