import type { Server } from 'node:net';

import { Controller, Get, type INestApplication, Post } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { MemoryRateLimitStore } from '../../lib/stores/memory/memory.store.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailingStore } from '../support/failing-store.js';
import { postOn } from '../support/http-post.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { Gate, waitFor } from '../support/wait.js';
import { alignedStart } from '../support/time.js';

// failMode 'local' over HTTP, on a store that fails on demand (a real MemoryRateLimitStore behind a switch):
// the headers of a local decision, leases taken locally given back locally, and the start-up checks.

const gate = new Gate();
const API = { name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m', key: 'ip' } as const;
const UPLOADS = { name: 'uploads', algorithm: 'concurrency', limit: 4, window: '5m', key: 'ip' } as const;

@Controller()
class LocalController {
  @Get('api')
  @RateLimit(API)
  api() {
    return 'ok';
  }

  @Get('both')
  @RateLimit([API, { name: 'refused', algorithm: 'gcra', limit: 100, window: '1m', key: 'ip', failMode: 'closed' }])
  both() {
    return 'ok';
  }

  @Post('upload')
  @RateLimit(UPLOADS)
  async upload() {
    await gate.pass();
    return 'stored';
  }
}

describe.each(ADAPTERS)("failMode 'local' over HTTP (%s)", (adapter) => {
  let app: INestApplication;
  let store: FailingStore;
  // at the start of a minute: a window's reset is its whole length
  const clock = new FakeClock(alignedStart(60_000) + 60_000);

  beforeEach(async () => {
    store = new FailingStore(new MemoryRateLimitStore({ clock }));
    const options: RateLimitModuleOptions = { store, failMode: 'local', instances: 2, timeout: 20 };
    ({ app } = await createApp(
      adapter,
      { imports: [RateLimitModule.forRoot(options)], controllers: [LocalController] },
      clock,
    ));
    await app.listen(0, '127.0.0.1');
  });
  afterEach(async () => {
    gate.open();
    await app.close();
  });
  const get = (path: string) => request(app.getHttpServer()).get(path);
  const breakerClosed = () => !app.get(RateLimiter).engine.breakerFor(store).isOpen;

  it('answers on the local limit while the store fails, with honest headers, then on the store again', async () => {
    store.health = 'fails';
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await get('/api');
      statuses.push(res.status);
      // ceil(10 / 2) = 5 in this process
      expect(res.headers['ratelimit-policy']).toBe('"api";q=5;w=60');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    // a fail-closed policy beside it refuses the request: closed wins, and the local budget is not touched
    expect((await get('/both')).status).toBe(503);

    store.health = 'answers';
    await waitFor(breakerClosed, 'the breaker to close');
    const res = await get('/api');
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-policy']).toBe('"api";q=10;w=60');
    expect(res.headers['ratelimit']).toBe('"api";r=9;t=60');
  });

  it('a lease taken locally goes back to the local store when its request ends, after the store came back', async () => {
    const server = app.getHttpServer() as Server;
    store.health = 'hangs';
    const held = [postOn(server, '/upload'), postOn(server, '/upload')];
    await waitFor(() => gate.held === 2, 'two uploads in their handlers');
    // ceil(4 / 2) = 2 leases in this process
    expect(await postOn(server, '/upload').status).toBe(429);

    store.health = 'answers';
    await waitFor(breakerClosed, 'the breaker to close');
    gate.open();
    expect(await Promise.all(held.map((r) => r.status))).toEqual([201, 201]);
    const limiter = app.get(RateLimiter);
    await limiter.refundsSettled();
    // the store never saw those leases, so it was never asked to take them back...
    expect(store.calls.refund).toBe(0);
    // ...and the local store has both back
    const local = limiter.engine.local;
    const uploads = [...limiter.planner.declared()].find((p) => p.policy.name === 'uploads')?.policy;
    const [lease] = await local.store.peek([
      { policy: local.policyOf(uploads ?? fail('no uploads')), key: 'ip:127.0.0.1' },
    ]);
    expect(lease?.remaining).toBe(2);
    // the store decides again, with its own 4
    const next = Array.from({ length: 5 }, () => postOn(server, '/upload'));
    const refused: number[] = [];
    next.forEach((r) => void r.status.then((s) => s === 429 && refused.push(s)));
    await waitFor(() => gate.held === 4 && refused.length === 1, 'four uploads in their handlers, one refused');
    gate.open();
    const statuses = await Promise.all(next.map((r) => r.status));
    expect(statuses.filter((s) => s === 201)).toHaveLength(4);
  });
});

function fail(message: string): never {
  throw new Error(message);
}

describe("failMode 'local' at start", () => {
  @Controller()
  class StrayController {
    @Get('stray')
    @RateLimit({ ...API, localLimit: 3 })
    stray() {
      return 'ok';
    }
  }

  it("a localLimit that the module's fail mode would never use stops the start, naming the handler", async () => {
    await expect(
      createApp('express', { imports: [RateLimitModule.forRoot({})], controllers: [StrayController] }),
    ).rejects.toThrow(
      'Invalid rate-limit policy "api" (declared on StrayController.stray), field "localLimit": applies only with ' +
        "failMode 'local', and the module's failMode is 'open'",
    );
    // with the module's failMode 'local' it starts
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ failMode: 'local' })],
      controllers: [StrayController],
    });
    await app.close();
  });

  it.each([0, 1.5, '2'])('instances %p stops the start with the option named', async (instances) => {
    const options = { failMode: 'local', instances } as unknown as RateLimitModuleOptions;
    await expect(createApp('express', { imports: [RateLimitModule.forRoot(options)] })).rejects.toThrow(
      /nest-rate-limit: option "instances" must be an integer >= 1 \(the app instances that share the store\), got/,
    );
  });
});
