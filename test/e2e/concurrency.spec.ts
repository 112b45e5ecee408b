import type { AddressInfo, Server } from 'node:net';

import { Controller, type INestApplication, Post } from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { Query, Resolver } from '@nestjs/graphql';

import { RateLimit, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { startGraphQLApp } from '../support/graphql-app.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { Gate, waitFor } from '../support/wait.js';
import { postOn } from '../support/http-post.js';
import { STORES, storeOptions, storeServers } from '../support/store-options.js';

const gate = new Gate();
const AI = { name: 'ai-concurrent', algorithm: 'concurrency', limit: 2, window: '5m', key: 'ip' } as const;

@Controller('ai')
class CompletionsController {
  @Post('complete')
  @RateLimit(AI)
  async complete() {
    await gate.pass();
    return { text: 'done' };
  }

  @Post('fail')
  @RateLimit({ ...AI, name: 'ai-failing' })
  async fail() {
    await gate.pass();
    throw new Error('provider down');
  }
}

const servers = storeServers();

describe.each(ADAPTERS)('concurrency limits over HTTP (%s)', (adapter) => {
  describe.each(STORES)('on the %s store', (store) => {
    let app: INestApplication;
    let server: Server;
    beforeEach(async () => {
      ({ app } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot(storeOptions(store, servers))],
        controllers: [CompletionsController],
      }));
      await app.listen(0, '127.0.0.1');
      server = app.getHttpServer() as Server;
    });
    afterEach(async () => {
      gate.open();
      await app.close();
      gate.most = 0;
    });
    const leasesFree = async (policy: string) => {
      await app.get(RateLimiter).refundsSettled();
      return (await app.get(RateLimitService).peek(policy, 'ip:127.0.0.1')).remaining;
    };

    it('never runs more than 2 of 50 concurrent requests at once, and gives the leases back when they end', async () => {
      const requests = Array.from({ length: 50 }, () => postOn(server, '/ai/complete'));
      const answered: (number | undefined)[] = [];
      requests.forEach((r, i) => void r.status.then((status) => (answered[i] = status)));
      // Two run and hold their leases; the 48 others are refused while they do.
      await waitFor(() => answered.filter((s) => s === 429).length === 48);
      expect(gate.held).toBe(2);
      gate.open();
      const statuses = await Promise.all(requests.map((r) => r.status));
      expect(statuses.filter((s) => s === 201)).toHaveLength(2);
      expect(gate.most).toBe(2);
      expect(await leasesFree('ai-concurrent')).toBe(2);
      // Free again: the next two run.
      const next = [postOn(server, '/ai/complete'), postOn(server, '/ai/complete')];
      await waitFor(() => gate.held === 2);
      gate.open();
      expect(await Promise.all(next.map((r) => r.status))).toEqual([201, 201]);
    });

    it('gives a lease back when the handler throws', async () => {
      const failing = [postOn(server, '/ai/fail'), postOn(server, '/ai/fail')];
      await waitFor(() => gate.held === 2);
      expect(await postOn(server, '/ai/fail').status).toBe(429);
      gate.open();
      expect(await Promise.all(failing.map((r) => r.status))).toEqual([500, 500]);
      expect(await leasesFree('ai-failing')).toBe(2);
    });

    it('gives a lease back when the client goes away', async () => {
      const first = postOn(server, '/ai/complete');
      const second = postOn(server, '/ai/complete');
      await waitFor(() => gate.held === 2);
      expect(await leasesFree('ai-concurrent')).toBe(0);
      first.abort();
      second.abort();
      await first.status;
      await second.status;
      // The response closes with the socket; the lease goes back then, before the handler ends.
      for (let i = 0; i < 200 && (await leasesFree('ai-concurrent')) < 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(await leasesFree('ai-concurrent')).toBe(2);
      expect(gate.held).toBe(2); // the handlers still wait: the leases went back with the clients
    });

    it('says qu="concurrent-requests" in RateLimit-Policy', async () => {
      const { port } = server.address() as AddressInfo;
      const pending = fetch(`http://127.0.0.1:${port}/ai/complete`, { method: 'POST' });
      await waitFor(() => gate.held === 1);
      gate.open();
      const res = await pending;
      expect(res.headers.get('ratelimit-policy')).toBe('"ai-concurrent";q=2;qu="concurrent-requests"');
      expect(res.headers.get('ratelimit')).toBe('"ai-concurrent";r=1;t=300');
    });
  });
});

@Controller('counted')
class CountedController {
  @Post('failed')
  @RateLimit({ name: 'failures', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip', count: 'failed' })
  failed() {
    return 'ok';
  }

  @Post('judged')
  @RateLimit({ name: 'judged', algorithm: 'fixed-window', limit: 5, window: '1m', key: 'ip', count: () => true })
  judged() {
    return 'ok';
  }
}

describe('the outcome interceptor on HTTP routes', () => {
  it("is left off routes whose counted policies are concurrency limits or say 'failed' (the response's status ends them), kept for a count function", async () => {
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({})],
      controllers: [CompletionsController, CountedController],
    });
    try {
      // Nest runs an interceptor chain (Observables) on every request of a handler that has an interceptor.
      expect(Reflect.getMetadata(INTERCEPTORS_METADATA, CompletionsController.prototype.complete)).toBeUndefined();
      expect(Reflect.getMetadata(INTERCEPTORS_METADATA, CountedController.prototype.failed)).toBeUndefined();
      // A count function is given what the handler threw (an exception filter may answer it with a 2xx).
      expect(Reflect.getMetadata(INTERCEPTORS_METADATA, CountedController.prototype.judged)).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});

const gqlGate = new Gate();

@Resolver()
class GenerateResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ ...AI, name: 'gql-concurrent', limit: 1 })
  async generate(): Promise<string> {
    await gqlGate.pass();
    return 'generated';
  }
}

describe('concurrency limits in GraphQL', () => {
  it('runs one operation at a time for a key, and frees the lease when the resolver returns', async () => {
    const gql = await startGraphQLApp('apollo', { resolvers: [GenerateResolver], rateLimit: {} });
    try {
      const first = gql.gql('{ generate }');
      await waitFor(() => gqlGate.held === 1);
      const second = await gql.gql('{ generate }');
      expect(second.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
      gqlGate.open();
      expect((await first).data).toEqual({ generate: 'generated' });
      await gql.app.get(RateLimiter).refundsSettled();
      const third = gql.gql('{ generate }');
      await waitFor(() => gqlGate.held === 1);
      gqlGate.open();
      expect((await third).data).toEqual({ generate: 'generated' });
      expect(gqlGate.most).toBe(1);
    } finally {
      gqlGate.open();
      await gql.close();
    }
  });
});

// Regression: a concurrency denial was kept in the local cache of denials until its retry-after (when the
// oldest lease would expire, minutes away), so an instance kept refusing a key whose leases another instance
// had given back long before.
it('a lease given back by one instance frees the key at once for another (no cached denial)', async () => {
  const options = { redis: { url: `redis://127.0.0.1:${servers.redis.port}` }, keyPrefix: `conc-two${Math.random()}:` };
  const start = async () => {
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot(options)],
      controllers: [CompletionsController],
    });
    await app.listen(0, '127.0.0.1');
    return app;
  };
  const first = await start();
  const second = await start();
  try {
    const running = [
      postOn(first.getHttpServer() as Server, '/ai/complete'),
      postOn(first.getHttpServer() as Server, '/ai/complete'),
    ];
    await waitFor(() => gate.held === 2);
    expect(await postOn(second.getHttpServer() as Server, '/ai/complete').status).toBe(429);
    gate.open();
    expect(await Promise.all(running.map((r) => r.status))).toEqual([201, 201]);
    await first.get(RateLimiter).refundsSettled();
    const again = postOn(second.getHttpServer() as Server, '/ai/complete');
    await waitFor(() => gate.held === 1);
    gate.open();
    expect(await again.status).toBe(201);
  } finally {
    gate.open();
    await first.close();
    await second.close();
  }
});
