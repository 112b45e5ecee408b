import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createTestSchema, type TestSchema } from '../support/postgres.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { statusesOf } from '../support/nest-app.js';

// Regression: a `lease` on PostgreSQL (which grants none yet) did nothing and said nothing: the team expecting
// store calls to fall to 1 / lease saw every request reach the database. It is now said at start, as a quota
// kept outside PostgreSQL is; the limits themselves hold exactly either way.

@Controller('hot')
class HotController {
  @Get()
  @RateLimit({ name: 'tenant-wide', algorithm: 'fixed-window', limit: 2, window: '1h', key: 'ip', lease: 10 })
  hot() {
    return 'ok';
  }
}

@Controller('monthly')
class QuotaController {
  @Get()
  @RateLimit({ name: 'monthly', algorithm: 'quota', period: 'month', limit: 5, key: 'ip' })
  monthly() {
    return 'ok';
  }
}

async function start(options: RateLimitModuleOptions, controller: object): Promise<[INestApplication, string[]]> {
  const logger = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [controller as new () => unknown],
  }).compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return [app, logger.find('warn', /./).map((e) => e.message)];
}

describe('what the module says at start of declarations that will not act as they read', () => {
  let redis: TestRedis;
  let pg: TestSchema;
  beforeAll(async () => {
    redis = await startRedis();
    pg = await createTestSchema();
  });
  afterAll(async () => {
    await redis?.stop();
    await pg?.drop();
  });

  it('a lease on PostgreSQL: said once, naming the policy; the limit holds exactly', async () => {
    const postgres = { connectionString: pg.url, schema: pg.schema, migrate: true };
    const [app, warnings] = await start({ postgres }, HotController);
    try {
      expect(warnings).toEqual([
        'Policies with a lease (tenant-wide) are on a store that grants none (PostgreSQL grants no leases yet): ' +
          'their limits hold exactly, but every request is a store call, as without `lease`.',
      ]);
      expect(await statusesOf(app, '/hot', 3)).toEqual([200, 200, 429]);
    } finally {
      await app.close();
    }
  });

  it('a lease on Redis, which grants: nothing to say', async () => {
    const [app, warnings] = await start({ redis: { url: redis.url } }, HotController);
    await app.close();
    expect(warnings).toEqual([]);
  });

  it('a quota outside PostgreSQL: not billing-grade, said once', async () => {
    const [app, warnings] = await start({ redis: { url: redis.url } }, QuotaController);
    await app.close();
    expect(warnings).toEqual([expect.stringMatching(/^Quota policies \(monthly\) are kept in the rate-limit store/)]);
  });

  it('a quota in PostgreSQL: nothing to say', async () => {
    const postgres = { connectionString: pg.url, schema: pg.schema, migrate: true };
    const [app, warnings] = await start({ redis: { url: redis.url }, postgres }, QuotaController);
    await app.close();
    expect(warnings).toEqual([]);
  });
});
