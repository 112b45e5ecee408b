import { Controller, Get, Inject, Injectable, Module } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';

import { RateLimit, RateLimitGuard, RateLimitModule, RateLimitService, RateLimitStore } from '../../lib/index.js';
import { statusesOf } from '../support/nest-app.js';

// Regression: `imports: [RateLimitModule]` in a feature module, next to forRoot in AppModule (the Nest habit, and
// what Nest's own error tells you when a service is missing), crashed the start: "Nest can't resolve dependencies
// of the Symbol(nest-rate-limit:created-stores) (?, Symbol(RateLimitClock))".

@Injectable()
class ReportsService {
  constructor(
    readonly rateLimits: RateLimitService,
    @Inject(RateLimitStore) readonly store: RateLimitStore,
    readonly guard: RateLimitGuard,
  ) {}
}

@Controller('reports')
class ReportsController {
  @Get()
  @RateLimit({ name: 'reports', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' })
  list() {
    return 'ok';
  }
}

@Module({ imports: [RateLimitModule], providers: [ReportsService], controllers: [ReportsController] })
class ReportsModule {}

async function start(imports: unknown[]) {
  const moduleRef = await Test.createTestingModule({ imports: imports as never[] }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  await app.init();
  return app;
}

describe('regression: a feature module that imports RateLimitModule', () => {
  it.each([
    ['forRoot', () => RateLimitModule.forRoot({})],
    ['forRootAsync', () => RateLimitModule.forRootAsync({ useFactory: () => ({}) })],
  ])('starts next to %s in the root module, with the root module’s instances', async (_, root) => {
    const app = await start([root(), ReportsModule]);
    try {
      const reports = app.get(ReportsService);
      expect(reports.rateLimits).toBe(app.get(RateLimitService));
      expect(reports.store).toBe(app.get(RateLimitStore));
      expect(reports.guard).toBe(app.get(RateLimitGuard));
      expect(await statusesOf(app, '/reports', 2)).toEqual([200, 429]);
    } finally {
      await app.close();
    }
  });

  it('with no forRoot anywhere, stops the start saying to call forRoot once in the root module', async () => {
    await expect(start([ReportsModule])).rejects.toThrow(
      /RateLimitModule is imported, but no module of the application calls RateLimitModule\.forRoot\(\).*call it once, in the root module/,
    );
  });
});
