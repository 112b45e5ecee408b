import type { Redis } from 'ioredis';

import type { PgPool, RedisConnection } from './client-types.js';

/** A connection string without its password (and user name), for logs. */
export function withoutCredentials(connection: string): string {
  try {
    const url = new URL(connection);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return '(a connection string that is not a URL)';
  }
}

/** Where a Redis client connects: `redis://host:port/db`, or a cluster's first nodes. */
export function redisAddress(client: RedisConnection): string {
  if (client.isCluster) {
    // The nodes it was given (the Cluster has not connected yet when the module starts).
    const given = (client as unknown as { startupNodes?: (string | number | { host?: string; port?: number })[] })
      .startupNodes;
    const nodes = (given ?? []).map((node) =>
      typeof node === 'object' ? `${node.host ?? 'localhost'}:${node.port ?? 6379}` : withoutCredentials(String(node)),
    );
    if (nodes.length === 0) return 'a Redis Cluster';
    return `a Redis Cluster (${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''})`;
  }
  const { host, port, db, path, sentinels, name } = (client as unknown as Redis).options;
  if (sentinels !== undefined && sentinels !== null && sentinels.length > 0) {
    const at = sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).join(', ');
    return `Redis master "${name ?? 'mymaster'}" through the sentinels ${at}`;
  }
  if (path !== undefined && path !== null && path !== '') return `Redis at ${path}`;
  return `Redis at ${host ?? 'localhost'}:${port ?? 6379}${db ? `/${db}` : ''}`;
}

/** Where a PostgreSQL pool connects (without credentials), and the schema of the module's tables. */
export function postgresAddress(pool: PgPool, connectionString: string | undefined, schema = 'public'): string {
  const options = pool.options as { host?: string; port?: number; database?: string } | undefined;
  const address =
    connectionString !== undefined
      ? withoutCredentials(connectionString)
      : `${options?.host ?? process.env.PGHOST ?? 'localhost'}:${options?.port ?? process.env.PGPORT ?? 5432}/${options?.database ?? process.env.PGDATABASE ?? ''}`;
  return `PostgreSQL at ${address}, schema ${schema}`;
}
