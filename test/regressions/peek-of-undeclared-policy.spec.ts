import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Controller, Get, type INestApplication, Post } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { RateLimit, RateLimitModule, RateLimitPolicyError, RateLimitService } from '../../lib/index.js';

// Regression (issue 41, "from a new user's first hour"): an operator who guessed a policy's name wrong
// (`peek('hello-ip', …)` for the route's 'hello') was told only that no policy of that name is declared, with
// nothing to say which names are: the guess could not be corrected from the message. Every method that takes a
// policy by name now names the declared ones (a `scope: 'route'` policy by its `name@Class.method`, the only
// name the service takes for it), and the identity a policy keys by is what peek and reset take: `ip:<address>`.

@Controller()
class HelloController {
  @Get('hello')
  @RateLimit({ name: 'hello', algorithm: 'fixed-window', limit: 2, window: '1m', key: 'ip' })
  hello() {
    return 'hello';
  }

  @Post('login')
  @RateLimit({ name: 'login', algorithm: 'fixed-window', limit: 5, window: '15m', key: 'ip', scope: 'route' })
  login() {
    return 'ok';
  }
}

describe('regression: peek of a policy no route declares', () => {
  let app: INestApplication;
  let service: RateLimitService;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          defaults: [{ name: 'per-user', algorithm: 'token-bucket', limit: 100, window: '1m', key: 'user' }],
        }),
      ],
      controllers: [HelloController],
    }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.init();
    service = app.get(RateLimitService);
  });
  afterAll(() => app.close());

  const declared = '"hello", "login@HelloController.login", "per-user"';

  it.each([
    ['peek', (s: RateLimitService) => s.peek('hello-ip', 'ip:127.0.0.1')],
    ['reset', (s: RateLimitService) => s.reset('hello-ip', 'ip:127.0.0.1')],
    ['consume', (s: RateLimitService) => s.consume('hello-ip', 'ip:127.0.0.1')],
    ['consumeMany', (s: RateLimitService) => s.consumeMany([{ policy: 'hello-ip', key: 'ip:127.0.0.1' }])],
    ['reserve', (s: RateLimitService) => s.reserve([{ policy: 'hello-ip', key: 'ip:127.0.0.1', cost: 1 }])],
    ['refund', (s: RateLimitService) => s.refund('hello-ip', 'ip:127.0.0.1', 1)],
    ['block', (s: RateLimitService) => s.block('hello-ip', 'ip:127.0.0.1', 1000)],
    ['unblock', (s: RateLimitService) => s.unblock('hello-ip', 'ip:127.0.0.1')],
    ['acquire', (s: RateLimitService) => s.acquire('hello-ip', 'ip:127.0.0.1', { maxWaitMs: 0 })],
    ['usage', (s: RateLimitService) => s.usage('hello-ip', 'ip:127.0.0.1')],
  ])('%s of an undeclared name is an error naming it and the declared names', async (_method, call) => {
    const error = await call(service).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RateLimitPolicyError);
    expect((error as RateLimitPolicyError).policy).toBe('hello-ip');
    expect((error as Error).message).toContain(`no policy of that name is declared`);
    expect((error as Error).message).toContain(`the declared names are ${declared}.`);
  });

  // docs/service.md shows the error this file's app gets (wrapped at spaces): it must be that error.
  it('is the error docs/service.md shows', async () => {
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'service.md'), 'utf8');
    const shown = /## The key[^]*?```text\n([^]*?)\n```/.exec(page)?.[1]?.split('\n').join(' ');
    const error = await service.peek('hello-ip', 'ip:127.0.0.1').then(String, (e: unknown) => (e as Error).message);
    expect(shown).toBe(error);
  });

  it('peeks and resets the budget a route spends, by the identity it keys by', async () => {
    for (let i = 0; i < 2; i++) await request(app.getHttpServer()).get('/hello').expect(200);
    // The client's address as the module keys it: IPv4 as it is, also when the socket says IPv4-mapped IPv6.
    expect(await service.peek('hello', 'ip:127.0.0.1')).toMatchObject({ allowed: false, remaining: 0 });
    // The bare address is another key, which no route's request counts under: it has its whole budget.
    expect(await service.peek('hello', '127.0.0.1')).toMatchObject({ allowed: true, remaining: 2 });
    await service.reset('hello', 'ip:127.0.0.1');
    await request(app.getHttpServer()).get('/hello').expect(200);
  });
});
