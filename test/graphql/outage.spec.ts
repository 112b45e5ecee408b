import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { FailModeResolver } from './fixtures.js';

const TIMEOUT_MS = 100;
/** Slack for the event loop and the HTTP round trip: the point is that nothing waits for Redis. */
const MARGIN_MS = 400;

describe.each(GRAPHQL_DRIVERS)('GraphQL with Redis killed, on %s', (driver) => {
  let redis: TestRedis;
  let t: GraphQLTestApp;
  const failures: string[] = [];

  beforeEach(async () => {
    failures.length = 0;
    redis = await startRedis();
    t = await startGraphQLApp(driver, {
      resolvers: [FailModeResolver],
      rateLimit: { redis: { url: redis.url }, timeout: TIMEOUT_MS, onError: (_error, policy) => failures.push(policy) },
    });
  });
  afterEach(async () => {
    await t.close();
    await redis.stop();
  });

  async function timed(query: string) {
    const started = performance.now();
    const res = await t.gql(query);
    return { res, ms: performance.now() - started };
  }

  it('fail open resolves, fail closed gets RATE_LIMIT_UNAVAILABLE with Retry-After, nothing waits; back when restarted', async () => {
    const healthy = await t.gql('{ open closed }');
    expect(healthy.data).toEqual({ open: 'ok', closed: 'ok' });
    expect(healthy.errors).toBeUndefined();

    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    for (let i = 0; i < 10; i++) {
      const { res, ms } = await timed('{ open closed }');
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
      expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    }
    // Fail open alone: the field resolves, and no rate-limit fields are sent (nothing is known).
    const { res: open, ms } = await timed('{ open }');
    expect(open.data).toEqual({ open: 'ok' });
    expect(open.errors).toBeUndefined();
    expect([open.headers['ratelimit'], open.headers['ratelimit-policy'], open.headers['retry-after']]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    expect(failures).toEqual(expect.arrayContaining(['open', 'closed']));

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
