import type { RateLimitModuleOptions } from '../../lib/index.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLResponse } from '../support/graphql-app.js';
import { redisForSpec } from '../support/redis-server.js';
import { FloodResolver } from './fixtures.js';

type StoreName = 'memory' | 'redis';

/** How many of the responses had `flood` resolved, and how many had it denied (and nothing else). */
function tally(responses: GraphQLResponse[]): { admitted: number; denied: number; other: number } {
  let admitted = 0;
  let denied = 0;
  let other = 0;
  for (const res of responses) {
    const codes = (res.errors ?? []).map((e) => e.extensions?.code);
    if (res.status === 200 && res.data?.flood === 'ok' && codes.length === 0) admitted++;
    else if (res.status === 200 && res.data?.flood === null && codes.join() === 'RATE_LIMITED') denied++;
    else other++;
  }
  return { admitted, denied, other };
}

describe.each(GRAPHQL_DRIVERS)('exact admission under concurrency on %s', (driver) => {
  const redis = redisForSpec();

  it.each<StoreName>(['memory', 'redis'])(
    '%s store: 200 concurrent operations (separate HTTP requests) at 100 per minute admit exactly 100',
    async (store) => {
      const rateLimit: RateLimitModuleOptions =
        // A generous timeout: 200 decisions at once on 2 shared cores must not fall into the fail mode here.
        store === 'redis' ? { redis: { url: redis.url }, keyPrefix: `${driver}:`, timeout: 2000 } : {};
      const t = await startGraphQLApp(driver, { resolvers: [FloodResolver], rateLimit });
      try {
        const responses = await Promise.all(Array.from({ length: 200 }, () => t.gql('{ flood }')));
        expect(tally(responses)).toEqual({ admitted: 100, denied: 100, other: 0 });
        const after = await t.service().peek('flood', 'ip:127.0.0.1');
        expect(after.remaining).toBe(0);
        if (store === 'redis')
          // The key of the one client, and the policies the instance recorded at start.
          expect((await redis.client().keys(`${driver}:*`)).sort()).toEqual(
            [storageKey(`${driver}:`, { id: 'flood', shape: 'swl1m' }, 'ip:127.0.0.1'), `${driver}:policies`].sort(),
          );
      } finally {
        await t.close();
      }
    },
  );
});
