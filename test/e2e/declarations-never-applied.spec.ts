import { Controller, Get, Injectable } from '@nestjs/common';

import { RateLimit, RateLimitModule, type RateLimitPolicy } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';

// A declaration the limiter would never enforce stops the start, naming where it is (issue 20: planning was
// split into route-planner.ts, application-walk.ts and declared-policies.ts, and these refusals had no test).

const LOGIN: RateLimitPolicy = { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip' };

/** A provider Nest calls no handler of: a policy on it would never apply. */
@Injectable()
@RateLimit(LOGIN)
class MailerService {
  send() {
    return 'sent';
  }
}

/** A method of a provider that is not a resolver or a gateway's message handler: Nest never calls it as one. */
@Injectable()
class AuditService {
  @RateLimit(LOGIN)
  record() {
    return 'recorded';
  }
}

@Controller('b')
class TwiceController {
  @Get()
  @RateLimit([LOGIN, { ...LOGIN, limit: 10 }])
  index() {
    return 'b';
  }
}

const start = (metadata: { controllers?: unknown[]; providers?: unknown[] }) =>
  createApp('express', { imports: [RateLimitModule.forRoot({})], ...metadata } as never);

describe('a declaration that would never apply stops the start', () => {
  it('on a class Nest calls no handler of', async () => {
    await expect(start({ providers: [MailerService] })).rejects.toThrow(
      'Invalid rate-limit policy "login" (declared on MailerService): ' +
        'is declared on a class Nest calls no handler of (not a controller, resolver or gateway); it would never apply',
    );
  });

  it('on a method Nest never calls as a handler', async () => {
    await expect(start({ providers: [AuditService] })).rejects.toThrow(
      'Invalid rate-limit policy "login" (declared on AuditService.record): is declared on a method Nest ' +
        'never calls as a handler',
    );
  });

  it('twice under one name on the same target', async () => {
    await expect(start({ controllers: [TwiceController] })).rejects.toThrow(
      'Invalid rate-limit policy "login" (declared on TwiceController.index), field "name": is declared twice on ' +
        'the same target; names must be unique per route',
    );
  });
});
