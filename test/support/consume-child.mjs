// A separate process that consumes against the test's Redis through the built package (dist/).
// argv: port (comma-separated Cluster ports, or pg:<schema> for the machine's PostgreSQL), algorithm, count,
// keyPrefix, nowMs. Prints "ready", waits for "go" on stdin, prints the admitted count.
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';

import { PostgresRateLimitStore, RedisRateLimitStore, validatePolicy } from '../../dist/index.js';

const [port, algorithm, count, keyPrefix, nowMs] = process.argv.slice(2);
const clock = { now: () => Number(nowMs) };
let client;
let store;
if (port.startsWith('pg:')) {
  client = new pg.Pool({ host: '127.0.0.1', user: 'postgres', database: 'test', max: 10 });
  store = new PostgresRateLimitStore({ pool: client, schema: port.slice(3), keyPrefix, clock, pruneIntervalMs: 0 });
} else {
  client = port.includes(',')
    ? new Cluster(port.split(',').map((p) => ({ host: '127.0.0.1', port: Number(p) })))
    : new Redis({ host: '127.0.0.1', port: Number(port) });
  store = new RedisRateLimitStore({ client, keyPrefix, clock });
}
const limit = Number(process.env.LIMIT ?? 100);
const policy =
  algorithm === 'quota'
    ? validatePolicy({ name: 'flood', algorithm, limit, period: 'month', timeZone: 'Europe/Paris' })
    : validatePolicy({ name: 'flood', algorithm, limit, window: '1m' });
await (store.load?.() ?? store.ping());
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const decisions = await Promise.all(
    Array.from({ length: Number(count) }, () => store.consume([{ policy, key: 'one-key', cost: 1 }])),
  );
  process.stdout.write(`${decisions.filter(([d]) => d.allowed).length}\n`);
  await (client.end?.() ?? client.disconnect());
});
