import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitStore,
  type RateLimitStoreItem,
} from '../../lib/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { CapturingLogger } from '../support/log-lines.js';

// Regression (issue 18): a store call that failed with a programming error — a client the module cannot drive
// (`TypeError: Function.prototype.apply was called on undefined`), a reply of the wrong shape — was taken for
// an outage: the breaker opened and every fail-open policy admitted everything, for as long as the defect
// lasted. Now such a request fails (500), the log says it is a defect, and the breaker stays closed.

/** A store of the app's that delegates to the memory store, but whose consume is broken in one of two ways. */
class BrokenStore implements RateLimitStore {
  consumes = 0;
  private readonly inner = new MemoryRateLimitStore();

  constructor(private readonly broken: 'throws' | 'short reply') {}

  async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.consumes++;
    if (this.broken === 'throws') throw new TypeError('Function.prototype.apply was called on undefined');
    return (await this.inner.consume(items)).slice(1);
  }
  peek = (items: readonly Omit<RateLimitStoreItem, 'cost'>[]) => this.inner.peek(items);
  refund = (items: readonly RateLimitStoreItem[]) => this.inner.refund(items);
  reset = (items: readonly Omit<RateLimitStoreItem, 'cost'>[]) => this.inner.reset(items);
  ping = () => Promise.resolve('PONG');
}

describe.each(['throws', 'short reply'] as const)('regression: a store defect is not an outage (%s)', (broken) => {
  let app: INestApplication;
  let store: BrokenStore;
  const log = new CapturingLogger();

  beforeAll(async () => {
    store = new BrokenStore(broken);
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store })],
      controllers: [FailModeController],
    })
      .setLogger(log)
      .compile();
    app = moduleRef.createNestApplication({ logger: log });
    await app.init();
  });
  afterAll(() => app.close());

  it('fails the request, fail open or closed, and never opens the breaker', async () => {
    for (let i = 0; i < 20; i++) {
      expect((await request(app.getHttpServer()).get('/open')).status).toBe(500);
      expect((await request(app.getHttpServer()).get('/closed')).status).toBe(500);
    }
    // Every request reached the store: no breaker answered for it.
    expect(store.consumes).toBe(40);
    expect(log.lines.filter((l) => l.includes('circuit open'))).toEqual([]);
    const defects = log.lines.filter((l) => l.startsWith('error Rate limiter defect for policy open'));
    expect(defects).toEqual([
      expect.stringContaining('a programming error, not an outage: the request fails instead of applying fail modes'),
    ]);
    expect(defects[0]).toContain(broken === 'throws' ? 'TypeError' : 'RateLimitStoreReplyError');
  });
});
