import { RateLimitStoreTimeoutError } from '../../lib/stores/store-timeout.js';
import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { FailModeResolver } from './fixtures.js';

const TIMEOUT_MS = 100;

describe.each(GRAPHQL_DRIVERS)('GraphQL with Redis killed, on %s', (driver) => {
  let redis: TestRedis;
  let t: GraphQLTestApp;
  const failures: string[] = [];
  const errors: unknown[] = [];

  beforeEach(async () => {
    failures.length = 0;
    errors.length = 0;
    redis = await startRedis();
    t = await startGraphQLApp(driver, {
      resolvers: [FailModeResolver],
      rateLimit: {
        redis: { url: redis.url },
        timeout: TIMEOUT_MS,
        onError: (error, policy) => {
          failures.push(policy);
          errors.push(error);
        },
      },
    });
  });
  afterEach(async () => {
    await t.close();
    await redis.stop();
  });

  it('fail open resolves, fail closed gets RATE_LIMIT_UNAVAILABLE with Retry-After, nothing waits; back when restarted', async () => {
    const healthy = await t.gql('{ open closed }');
    expect(healthy.data).toEqual({ open: 'ok', closed: 'ok' });
    expect(healthy.errors).toBeUndefined();

    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    for (let i = 0; i < 10; i++) {
      const res = await t.gql('{ open closed }');
      expect(res.status).toBe(200);
      expect(res.data).toEqual({ open: 'ok', closed: null });
      expect(res.errors).toEqual([
        {
          message: 'Rate limiter unavailable; policy "closed" fails closed',
          path: ['closed'],
          locations: [{ line: 1, column: 8 }],
          extensions: { code: 'RATE_LIMIT_UNAVAILABLE', policy: 'closed', retryAfter: 1 },
        },
      ]);
      expect(res.headers['retry-after']).toBe('1');
    }
    // Fail open alone: the field resolves, and no rate-limit fields are sent (nothing is known).
    const open = await t.gql('{ open }');
    expect(open.data).toEqual({ open: 'ok' });
    expect(open.errors).toBeUndefined();
    expect([open.headers['ratelimit'], open.headers['ratelimit-policy'], open.headers['retry-after']]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(failures).toEqual(expect.arrayContaining(['open', 'closed']));
    // Nothing waited for Redis: every call failed at once (the connection refused, then the open breaker),
    // none by its timeout (counted, not timed: a loaded machine slows the round trip, not this).
    expect(errors.filter((error) => error instanceof RateLimitStoreTimeoutError)).toEqual([]);

    const port = redis.port;
    await redis.stop();
    redis = await startRedis({ port });
    // The restarted Redis is empty: the first operation it admits starts the count again (5 per minute).
    await waitFor(async () => (await t.gql('{ closed }')).data?.closed === 'ok', 'the limiter to answer again', 8000);
    const after: (string | null | undefined)[] = [];
    for (let i = 0; i < 6; i++) after.push((await t.gql('{ closed }')).errors?.[0]?.extensions?.code as string);
    expect(after).toEqual([undefined, undefined, undefined, undefined, 'RATE_LIMITED', 'RATE_LIMITED']);
  });
});
