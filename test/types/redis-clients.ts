// Type-checked by `npm run lint` (never run): the client of each package the module drives compiles as
// `redis.client` and as a RedisRateLimitStore's `client`, without a cast; a Sentinel of redis 5, which the module
// refuses at start (it has no duplicate()), does not compile.
import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis';
import { Cluster as IovalkeyCluster, Redis as Iovalkey } from 'iovalkey';
import { createClient, createCluster, createSentinel } from 'redis';
import {
  createClient as createClient5,
  createCluster as createCluster5,
  createSentinel as createSentinel5,
} from 'redis5';

import { RateLimitModule, RedisRateLimitStore } from '../../lib/index.js';

const clients = [
  new Ioredis(),
  new IoredisCluster([]),
  new Iovalkey(),
  new IovalkeyCluster([]),
  createClient(),
  createCluster({ rootNodes: [] }),
  createSentinel({ name: 'mymaster', sentinelRootNodes: [] }),
  createClient5(),
  createCluster5({ rootNodes: [] }),
] as const;

export const modules = clients.map((client) => RateLimitModule.forRoot({ redis: { client } }));
export const stores = clients.map((client) => new RedisRateLimitStore({ client }));

export const refused = RateLimitModule.forRoot({
  // @ts-expect-error a Sentinel of redis 5 has no duplicate(): no connection of the module's own can be made from it
  redis: { client: createSentinel5({ name: 'mymaster', sentinelRootNodes: [] }) },
});
