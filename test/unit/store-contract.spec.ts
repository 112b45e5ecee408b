import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Controller, Get, type INestApplication } from '@nestjs/common';
import { expectTypeOf } from 'expect-type';
import request from 'supertest';

import {
  RateLimit,
  RateLimitModule,
  RateLimitService,
  type RateLimitDecision,
  type RateLimitStore,
  type RateLimitStoreItem,
} from '../../lib/index.js';
// @ts-expect-error the engine's side of the store contract is not exported from the package's root
import type { EngineStore } from '../../lib/index.js';
// @ts-expect-error nor is the timing of a queued consume
import type { RateLimitStoreCall } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { createApp } from '../support/nest-app.js';
import { alignedStart } from '../support/time.js';

// The public store contract (RateLimitStore) is all a store of a user's needs: a store that implements it and
// nothing else works through the module, and the engine treats what it lacks (deciding in process, granting a
// lease's units up to a bound, a feed of changes) as absent. What the bundled stores add stays out of the
// package's typings.

type Item = Omit<RateLimitStoreItem, 'cost'>;

/** A fixed-window store over a Map, written from the public contract alone, recording what it is given. */
class MapStore implements RateLimitStore {
  readonly consumed: RateLimitStoreItem[][] = [];
  private readonly counts = new Map<string, { windowStart: number; used: number }>();

  constructor(private readonly clock: FakeClock) {}

  async consume(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    this.consumed.push([...items]);
    const decisions = items.map((item) => this.decide(item, item.cost));
    if (decisions.every((d, i) => d.allowed || items[i]?.shadow === true)) {
      items.forEach((item, i) => {
        if (decisions[i]?.allowed === true) this.state(item).used += item.cost;
      });
    }
    return decisions;
  }

  async peek(items: readonly Item[]): Promise<RateLimitDecision[]> {
    return items.map((item) => this.decide(item, 1));
  }

  async refund(items: readonly RateLimitStoreItem[]): Promise<RateLimitDecision[]> {
    for (const item of items) this.state(item).used = Math.max(0, this.state(item).used - item.cost);
    return this.peek(items);
  }

  async reset(items: readonly Item[]): Promise<void> {
    for (const item of items) this.counts.delete(this.keyOf(item));
  }

  private keyOf({ policy, key }: Item): string {
    return `${policy.id}\n${key}`;
  }

  private state(item: Item): { windowStart: number; used: number } {
    const now = this.clock.now();
    const windowStart = now - (now % item.policy.windowMs);
    let state = this.counts.get(this.keyOf(item));
    if (state === undefined || state.windowStart !== windowStart) {
      state = { windowStart, used: 0 };
      this.counts.set(this.keyOf(item), state);
    }
    return state;
  }

  private decide(item: Item, cost: number): RateLimitDecision {
    const { policy } = item;
    const { windowStart, used } = this.state(item);
    const resetMs = windowStart + policy.windowMs - this.clock.now();
    const allowed = used + cost <= policy.limit;
    return {
      allowed,
      policy: policy.name,
      limit: policy.limit,
      remaining: Math.max(0, policy.limit - used - (allowed ? cost : 0)),
      resetMs,
      retryAfterMs: allowed ? 0 : resetMs,
    };
  }
}

@Controller()
class ContractController {
  @Get('limited')
  @RateLimit({ name: 'contract', algorithm: 'fixed-window', limit: 2, window: '1m' })
  limited(): string {
    return 'ok';
  }

  @Get('leased')
  @RateLimit({ name: 'leased', algorithm: 'fixed-window', limit: 5, window: '1m', lease: 4 })
  leased(): string {
    return 'ok';
  }
}

describe('a store written from the public contract alone', () => {
  let app: INestApplication;
  let store: MapStore;
  let clock: FakeClock;

  beforeEach(async () => {
    // At the start of a minute: a denial's Retry-After is the whole window.
    clock = new FakeClock(alignedStart(60_000));
    store = new MapStore(clock);
    ({ app } = await createApp(
      'express',
      { imports: [RateLimitModule.forRoot({ store })], controllers: [ContractController] },
      clock,
    ));
  });
  afterEach(() => app.close());

  it('limits requests through the module: a limit of 2 admits 2, the third gets a 429', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await request(app.getHttpServer()).get('/limited')).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(store.consumed.map((items) => items.map((item) => [item.policy.name, item.cost]))).toEqual([
      [['contract', 1]],
      [['contract', 1]],
      [['contract', 1]],
    ]);
    const denied = await request(app.getHttpServer()).get('/limited');
    expect(denied.headers['retry-after']).toBe('60');
    clock.advance(60_000);
    expect((await request(app.getHttpServer()).get('/limited')).status).toBe(200);
  });

  it('serves a policy with a lease without leases: each request consumes its cost, never asked for more', async () => {
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(app.getHttpServer()).get('/leased')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(store.consumed).toHaveLength(6);
    for (const items of store.consumed) for (const item of items) expect(item).not.toHaveProperty('upTo');
  });

  it('has RateLimitService say that it cannot block, since it has no block()', async () => {
    await expect(app.get(RateLimitService).block('contract', 'k', 1000)).rejects.toThrow(
      'the store (MapStore) cannot block keys: it has no block()/unblock()',
    );
  });
});

describe('the public store contract, as typed', () => {
  it('is four operations and six optional ones, with a one-argument consume', () => {
    expectTypeOf<keyof RateLimitStore>().toEqualTypeOf<
      'consume' | 'peek' | 'refund' | 'reset' | 'charge' | 'block' | 'unblock' | 'resetAll' | 'ping' | 'close'
    >();
    expectTypeOf<RateLimitStore['consume']>().parameters.toEqualTypeOf<[readonly RateLimitStoreItem[]]>();
    expectTypeOf<keyof RateLimitStoreItem>().toEqualTypeOf<'policy' | 'key' | 'cost' | 'shadow'>();
    expectTypeOf<EngineStore>().toBeAny();
    expectTypeOf<RateLimitStoreCall>().toBeAny();
  });

  // The typings users compile against (`npm run build` writes dist/): the bundled stores' engine capabilities
  // are @internal, stripped from them.
  it.each(['memory/memory.store.d.ts', 'redis/redis.store.d.ts', 'postgres/postgres.store.d.ts'])(
    "leaves the engine's capabilities out of the typings of %s",
    (file) => {
      const typings = readFileSync(join(import.meta.dirname, '..', '..', 'dist', 'stores', file), 'utf8');
      const declared = typings.slice(typings.indexOf('export declare class'));
      for (const name of ['inProcess', 'grantsUpTo', 'changes:', 'quotaUsage', 'RateLimitStoreCall', 'upTo']) {
        expect([file, name, declared.includes(name)]).toEqual([file, name, false]);
      }
      expect(declared).toMatch(/consume\(items: readonly RateLimitStoreItem\[\]\): Promise<RateLimitDecision\[\]>;/);
    },
  );
});
