import { Query, Resolver, Subscription } from '@nestjs/graphql';
import { WebSocket } from 'ws';

import { RateLimit } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLError, type GraphQLTestApp } from '../support/graphql-app.js';
import { alignedStart } from '../support/time.js';
import { perMinute } from '../support/policies.js';
import { PER_USER } from './fixtures.js';

@Resolver()
class TickResolver {
  @Query(() => String)
  noop(): string {
    return 'noop';
  }

  @Subscription(() => Number)
  @RateLimit(perMinute('ticks', 2))
  async *ticks(): AsyncGenerator<{ ticks: number }> {
    yield { ticks: 1 };
    yield { ticks: 2 };
  }
}

interface Outcome {
  values: unknown[];
  errors: GraphQLError[];
}

/** One subscription over the graphql-transport-ws protocol, to its end (complete or error), within 5 s. */
function subscribe(url: string, query: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, 'graphql-transport-ws');
    const outcome: Outcome = { values: [], errors: [] };
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`no end of the subscription within 5 s: ${JSON.stringify(outcome)}`));
    }, 5000);
    const finish = () => {
      clearTimeout(timer);
      socket.close();
      resolve(outcome);
    };
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
    socket.on('message', (raw: Buffer) => {
      const message = JSON.parse(raw.toString()) as { type: string; payload?: unknown };
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }));
      } else if (message.type === 'next') {
        const payload = message.payload as { data?: { ticks?: unknown } | null; errors?: GraphQLError[] };
        if (payload.data?.ticks !== undefined) outcome.values.push(payload.data.ticks);
        outcome.errors.push(...(payload.errors ?? []));
      } else if (message.type === 'error') {
        outcome.errors.push(...(message.payload as GraphQLError[]));
        finish();
      } else if (message.type === 'complete') {
        finish();
      }
    });
  });
}

describe.each(GRAPHQL_DRIVERS)('GraphQL subscriptions on %s', (driver) => {
  let t: GraphQLTestApp;
  beforeAll(async () => {
    t = await startGraphQLApp(driver, {
      resolvers: [TickResolver],
      rateLimit: { defaults: [PER_USER] },
      subscriptions: true,
      clock: new FakeClock(alignedStart(60_000) + 60_000),
    });
  });
  afterAll(() => t.close());

  it("decides each subscription when it starts, keyed by the WebSocket's client address, with the defaults", async () => {
    expect(await subscribe(t.wsUrl, 'subscription { ticks }')).toEqual({ values: [1, 2], errors: [] });
    expect(await subscribe(t.wsUrl, 'subscription { ticks }')).toEqual({ values: [1, 2], errors: [] });
    const denied = await subscribe(t.wsUrl, 'subscription { ticks }');
    expect(denied.values).toEqual([]);
    expect(denied.errors).toEqual([
      {
        message: 'Rate limit "ticks" exceeded; retry in 60 s',
        path: ['ticks'],
        locations: [{ line: 1, column: 16 }],
        extensions: { code: 'RATE_LIMITED', policy: 'ticks', retryAfter: 60 },
      },
    ]);
    const service = t.service();
    expect((await service.peek('ticks', 'ip:127.0.0.1')).remaining).toBe(0);
    // The default policy applies to subscriptions too, and the denied one consumed none of it.
    expect((await service.peek('per-user', 'ip:127.0.0.1')).remaining).toBe(998);
  });
});
