import type { INestApplication } from '@nestjs/common';

import { RateLimitModule, RateLimitService, type RateLimitPolicy } from '../../lib/index.js';
import type { FakeClock } from '../../lib/testing/index.js';
import { createApp } from '../support/nest-app.js';
import { STORES, storeOptions, storeServers } from '../support/store-options.js';

// Regression (issue 41, finding 4): a settlement gave back the whole difference between estimate and actual
// cost, even after the bucket had refilled and another request had taken those very tokens. A 1000/min
// bucket: A reserves 1000; 90 s later (the bucket full again) B takes 1000; A settles at 10 and 990 came
// back; C took 990 at once: 1,990 tokens within a second. A refund now gives back only what of the charge
// has not refilled since (lib/algorithms/still-held.ts).

const KEY = 'user:42';
const servers = storeServers();

describe.each(STORES)('a settlement on the %s store', (store) => {
  describe.each(['token-bucket', 'gcra'] as const)('of a 1000-a-minute %s', (algorithm) => {
    const policy: RateLimitPolicy = { name: `ai-${algorithm}`, algorithm, limit: 1000, window: '1m' };
    let app: INestApplication;
    let clock: FakeClock;
    let service: RateLimitService;
    beforeEach(async () => {
      ({ app, clock } = await createApp('express', {
        imports: [RateLimitModule.forRoot(storeOptions(store, servers))],
      }));
      service = app.get(RateLimitService);
    });
    afterEach(() => app.close());

    it('gives back nothing once the bucket has refilled and another request took the tokens', async () => {
      const a = await service.reserve([{ policy, key: KEY, cost: 1000 }]);
      expect(a.allowed).toBe(true);
      clock.advance(90_000);
      expect((await service.consume(policy, KEY, { cost: 1000 })).allowed).toBe(true);
      const [settled] = await a.settle(10);
      expect(settled?.remaining).toBe(0);
      const c = await service.consume(policy, KEY, { cost: 990 });
      expect(c).toMatchObject({ allowed: false, remaining: 0 });
      // what B took refills at the policy's rate: 990 tokens in 59.4 s
      expect(c.retryAfterMs).toBe(59_400);
    });

    // Why the rule counts from the charge, not from where the charge stood in the bucket's queue: a refund of
    // an earlier reservation moves the later one's units forward, and they refill sooner than its own decision
    // said (its reset, 60 s). Counted from its reset, R would give back 400 tokens that S took.
    it('gives back nothing of a charge that an earlier refund moved forward and that has refilled since', async () => {
      const q = await service.reserve([{ policy, key: KEY, cost: 500 }]);
      const r = await service.reserve([{ policy, key: KEY, cost: 500 }]);
      await q.cancel();
      clock.advance(30_000);
      expect((await service.consume(policy, KEY, { cost: 1000 })).allowed).toBe(true);
      clock.advance(6000);
      await r.settle(0);
      // 6 s after S took the whole bucket, 100 tokens have refilled, and no more
      expect(await service.consume(policy, KEY, { cost: 101 })).toMatchObject({ allowed: false, retryAfterMs: 60 });
    });

    it('gives back the part of the charge that has not refilled yet, exactly', async () => {
      const a = await service.reserve([{ policy, key: KEY, cost: 1000 }]);
      // 30 s later half the charge has refilled: of the 990 the estimate exceeded, 500 are still held
      clock.advance(30_000);
      const [settled] = await a.settle(10);
      expect(settled?.remaining).toBe(1000);
      expect((await service.consume(policy, KEY, { cost: 1000 })).allowed).toBe(true);
    });
  });
});
