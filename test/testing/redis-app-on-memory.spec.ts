import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RATE_LIMIT_OPTIONS, RateLimit, RateLimitModule, type RateLimitModuleOptions } from 'nest-rate-limit';
import request from 'supertest';

// docs/testing.md, "An app configured for Redis, tested without it": the app's AppModule, whose options name
// Redis by an environment variable, under an e2e test on the in-memory store.

@Controller()
class HelloController {
  @Get('hello')
  @RateLimit({ name: 'hello', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip' })
  hello() {
    return 'hello';
  }
}

/** The app's options, as its AppModule has them (here with no REDIS_URL set: the variable is the test's own). */
const rateLimitOptions = (): RateLimitModuleOptions => ({
  redis: { url: process.env.NEST_RATE_LIMIT_DOCS_REDIS_URL },
  keyPrefix: 'app:',
});

@Module({ imports: [RateLimitModule.forRoot(rateLimitOptions())], controllers: [HelloController] })
class AppModule {}

@Module({
  imports: [RateLimitModule.forRootAsync({ useFactory: rateLimitOptions })],
  controllers: [HelloController],
})
class AsyncAppModule {}

describe('an app configured for Redis, in an e2e test without Redis', () => {
  let app: INestApplication | undefined;
  afterEach(() => app?.close());

  it('does not start as it is: a `redis` that names no server stops the start', async () => {
    await expect(Test.createTestingModule({ imports: [AppModule] }).compile()).rejects.toThrow(/redis/);
  });

  it.each([
    ['forRoot', AppModule],
    ['forRootAsync', AsyncAppModule],
  ])('with %s, runs on the in-memory store once the test overrides the options', async (_, root) => {
    const moduleRef = await Test.createTestingModule({ imports: [root] })
      .overrideProvider(RATE_LIMIT_OPTIONS)
      .useValue({ ...rateLimitOptions(), redis: undefined })
      .compile();
    app = moduleRef.createNestApplication();
    await app.init();
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(429);
  });
});
