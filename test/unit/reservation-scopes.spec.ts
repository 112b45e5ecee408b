import { EventEmitter } from 'node:events';

import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { Test, type TestingModule } from '@nestjs/testing';

import { type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import type { Reservation } from '../../lib/service/reservation.js';
import { ReservationScopes } from '../../lib/service/reservation-scopes.js';
import { RateLimitTestingModule } from '../../lib/testing/index.js';
import { CapturingLogger } from '../support/log-lines.js';

const tokens: RateLimitPolicy = { name: 'ai-tokens', algorithm: 'token-bucket', limit: 10_000, window: '1m' };
const requests: RateLimitPolicy = { name: 'ai-requests', algorithm: 'fixed-window', limit: 100, window: '1m' };

class ChatController {
  complete(): void {}
}

/** A Node response as far as the scopes read it: `destroyed`, and the 'close' that ends the request. */
class Response extends EventEmitter {
  destroyed = false;
}

describe('ReservationScopes: the log of reservations left open', () => {
  let moduleRef: TestingModule;
  let service: RateLimitService;
  let logs: CapturingLogger;
  let nowMs: number;
  let scopes: ReservationScopes;

  beforeEach(async () => {
    moduleRef = await Test.createTestingModule({ imports: [RateLimitTestingModule.forRoot()] }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    service = moduleRef.get(RateLimitService);
    logs = new CapturingLogger();
    nowMs = 0;
    scopes = new ReservationScopes(logs, undefined, () => nowMs);
    scopes.track((await service.reserve([{ policy: tokens, key: 'warm-up', cost: 1 }])) as Reservation);
  });
  afterEach(() => moduleRef.close());

  /** One request to ChatController.complete that reserves `costs` (tokens, and one request) and leaves it open. */
  const leak = (tokenCost: number) =>
    new Promise<void>((resolve, reject) =>
      // A callback of its own, as each HTTP request has: the scope entered here stays in it.
      setImmediate(() => {
        const res = new Response();
        scopes.enter(new ExecutionContextHost([{}, res], ChatController, ChatController.prototype.complete));
        service
          .reserve([
            { policy: tokens, key: 'user:1', cost: tokenCost },
            { policy: requests, key: 'user:1' },
          ])
          .then((reservation) => {
            scopes.track(reservation as Reservation);
            res.emit('close');
            resolve();
          }, reject);
      }),
    );

  it('writes the first, holds the next ones of the quiet minute, and sums them in the line after it', async () => {
    await leak(300);
    await leak(200);
    await leak(100);
    expect(logs.warnings).toHaveLength(1);
    expect(logs.warnings[0]).toContain('ChatController.complete');
    expect(logs.warnings[0]).toContain('(ai-tokens: 300, ai-requests: 1)');
    nowMs += 60_000;
    await leak(50);
    expect(logs.warnings).toHaveLength(2);
    expect(logs.warnings[1]).toContain(
      '(ai-tokens: 50, ai-requests: 1); so were 2 more since the last report (ai-tokens: 300, ai-requests: 2)',
    );
    expect(logs.lines.join('\n')).not.toContain('user:1');
  });
});
