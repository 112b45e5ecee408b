import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';

import { MemoryRateLimitStore, RateLimitModule, RateLimitPolicyError, RateLimitService } from '../../lib/index.js';
import { FailingStore } from '../support/failing-store.js';

// Regression: RateLimitService.block() and unblock() on a store without block()/unblock() (a store of the user's,
// written from the public contract) refused inside the store call, so the refusal counted as a failure of the
// store: it went to onError as one, and five of them in a row opened the store's circuit breaker, after which
// every request met its fail mode though the store answered. charge() already refused before the store was
// asked; block() and unblock() now do too. The store here is FailingStore, always answering: the four required
// operations of a remote store, under the module's breaker.

describe('regression: block() on a store without block() counted as a store failure', () => {
  let app: INestApplication;
  let service: RateLimitService;
  const errors: string[] = [];

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          store: new FailingStore(new MemoryRateLimitStore()),
          defaults: [{ name: 'per-key', algorithm: 'fixed-window', limit: 10, window: '1m' }],
          onError: (error, policy) => errors.push(`${policy}: ${error.message}`),
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.init();
    service = app.get(RateLimitService);
  });
  afterAll(() => app.close());

  it('refuses each block and unblock, and the store goes on answering: no breaker opened, nothing reported', async () => {
    for (let i = 0; i < 6; i++) {
      await expect(service.block('per-key', 'k', 1000)).rejects.toThrow(RateLimitPolicyError);
      await expect(service.unblock('per-key', 'k')).rejects.toThrow(
        'the store (FailingStore) cannot block keys: it has no block()/unblock()',
      );
    }
    expect(errors).toEqual([]);
    await expect(service.peek('per-key', 'k')).resolves.toMatchObject({ allowed: true, remaining: 10 });
    await expect(service.consume('per-key', 'k')).resolves.toMatchObject({ allowed: true, remaining: 9 });
  });
});
