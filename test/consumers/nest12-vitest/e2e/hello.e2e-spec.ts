// The Testing example of docs/testing.md (test/testing/one-app-per-file.spec.ts), run by Vitest: the same file, with
// Vitest's functions imported.
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimit, RateLimitService } from 'nest-rate-limit';
import { FakeClock, RateLimitTestingModule } from 'nest-rate-limit/testing';
import request from 'supertest';

@Controller()
class HelloController {
  @Get('hello')
  @RateLimit({ name: 'hello', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip' })
  hello() {
    return 'hello';
  }
}

describe('GET /hello', () => {
  let app: INestApplication;

  // One app for the file; each test starts from nothing.
  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitTestingModule.forRoot()],
      controllers: [HelloController],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });
  afterEach(() => app.get(RateLimitService).resetAll());
  afterAll(() => app.close());

  it('allows 2 a minute', async () => {
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(429).expect('Retry-After', '60');
  });

  it('starts this test with a full budget', async () => {
    await request(app.getHttpServer()).get('/hello').expect(200);
  });

  it('allows 2 more once the window has passed', async () => {
    for (let i = 0; i < 2; i++) await request(app.getHttpServer()).get('/hello').expect(200);
    await request(app.getHttpServer()).get('/hello').expect(429);
    app.get(FakeClock).advance(60_000);
    await request(app.getHttpServer()).get('/hello').expect(200);
  });
});
