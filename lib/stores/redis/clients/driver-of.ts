import type { RedisClient } from '../../client-types.js';
import { GlideDriver } from './glide-driver.js';
import { isGlide } from './glide-types.js';
import { IOREDIS_COMMANDS, IoredisDriver } from './ioredis-driver.js';
import { isNodeRedis } from './node-redis-types.js';
import { NodeRedisDriver } from './node-redis-driver.js';
import type { RedisDriver } from './redis-driver.js';

/**
 * The driver of a Redis client, told from the object given (its methods; never instanceof, as each client
 * package is an optional peer): an ioredis or iovalkey Redis or Cluster, a node-redis client, Cluster or
 * Sentinel, or a Valkey GLIDE GlideClient or GlideClusterClient. Anything else is refused at start: every call would fail, and the fail modes would turn that into
 * an outage for ever. `where` names the option or argument, for the error.
 */
export function driverOf(client: unknown, where: string): RedisDriver {
  if (typeof client === 'object' && client !== null) {
    if (isNodeRedis(client)) return new NodeRedisDriver(client);
    if (isGlide(client)) return new GlideDriver(client);
    if (IOREDIS_COMMANDS.every((command) => typeof (client as Record<string, unknown>)[command] === 'function'))
      return new IoredisDriver(client as RedisClient);
  }
  const c = (client ?? {}) as Record<string, unknown>;
  if (typeof c.getMasterNode === 'function' && typeof c.sendCommand === 'function') {
    // redis 5's Sentinel keeps its options private and has no duplicate(): no connection can be made from it.
    throw new TypeError(
      `nest-rate-limit: ${where} is a node-redis 5 Sentinel (createSentinel() of redis 5), from which the module ` +
        'cannot make a connection of its own (it has no duplicate()): give a Sentinel of redis 6, or ' +
        "`redis: { options: { sentinels: [{ host, port }], name } }` for an ioredis connection of the module's own",
    );
  }
  const missing = IOREDIS_COMMANDS.filter((command) => typeof c[command] !== 'function');
  const kind = `${client === null || typeof client !== 'object' ? String(client) : `an instance of ${client.constructor?.name ?? 'Object'}`} (it has no ${missing.join(', ')})`;
  throw new TypeError(
    `nest-rate-limit: ${where} is ${kind}, which the module cannot drive: give an ioredis or iovalkey Redis or ` +
      'Cluster, a node-redis client, Cluster or Sentinel (createClient(), createCluster() or createSentinel() of ' +
      'the `redis` package), a GlideClient or GlideClusterClient of @valkey/valkey-glide, or `redis: { url }` ' +
      "for a connection of the module's own",
  );
}
