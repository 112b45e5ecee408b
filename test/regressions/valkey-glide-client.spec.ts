import { Controller, Get } from '@nestjs/common';
import { GlideClient, Logger as GlideLogger } from '@valkey/valkey-glide';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createApp, statusesOf } from '../support/nest-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Regression: a Valkey GLIDE client (`GlideClient` of @valkey/valkey-glide, the client AWS recommends for
// ElastiCache and MemoryDB for Valkey) given as `redis: { client }` stopped the start ("which the module does not
// drive yet"). It is driven now (issue 32): the module makes a GlideClient of its own from the client's
// configuration, and its limits hold exactly.

@Controller()
class LimitedController {
  @Get('limited')
  @RateLimit({ name: 'glide', algorithm: 'fixed-window', limit: 3, window: '1m', key: 'ip' })
  limited() {
    return 'ok';
  }
}

describe('regression: a Valkey GLIDE client given to the module', () => {
  let redis: TestRedis;
  let client: GlideClient;
  beforeAll(async () => {
    GlideLogger.setLoggerConfig('error');
    redis = await startRedis();
    client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: redis.port }] });
  });
  afterAll(async () => {
    client.close();
    await redis.stop();
  });

  it('starts the app, which admits 3 requests and answers the 4th with 429', async () => {
    const logger = new CapturingLogger();
    const { app } = await createApp(
      'express',
      {
        imports: [RateLimitModule.forRoot({ redis: { client }, keyPrefix: 'glide:' })],
        controllers: [LimitedController],
      },
      undefined,
      { logger },
    );
    try {
      expect(await statusesOf(app, '/limited', 4)).toEqual([200, 200, 200, 429]);
      expect(logger.find('log', /^Rate limits in /).map((e) => e.message)).toEqual([
        expect.stringContaining(`Redis at 127.0.0.1:${redis.port}`),
      ]);
      // The count is in Redis, under the module's prefix, beside the policies the instance recorded.
      const keys = (await client.customCommand(['KEYS', 'glide:*'])) as string[];
      expect(keys.map(String).sort()).toEqual(['glide:policies', expect.stringMatching(/^glide:\{glide:/)]);
    } finally {
      await app.close();
    }
    // The app's client was left as it was, and still works.
    expect(await client.customCommand(['PING'])).toBe('PONG');
  });
});
