// A separate process that consumes against the test's Redis through the built package (dist/).
// argv: port (or comma-separated Cluster ports), algorithm, count, keyPrefix, nowMs. Prints "ready", waits for "go" on stdin, prints the admitted count.
import { Cluster, Redis } from 'ioredis';

import { RedisRateLimitStore, validatePolicy } from '../../dist/index.js';

const [port, algorithm, count, keyPrefix, nowMs] = process.argv.slice(2);
const client = port.includes(',')
  ? new Cluster(port.split(',').map((p) => ({ host: '127.0.0.1', port: Number(p) })))
  : new Redis({ host: '127.0.0.1', port: Number(port) });
const store = new RedisRateLimitStore({ client, keyPrefix, clock: { now: () => Number(nowMs) } });
const policy = validatePolicy({ name: 'flood', algorithm, limit: 100, window: '1m' });
await store.load();
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const decisions = await Promise.all(
    Array.from({ length: Number(count) }, () => store.consume([{ policy, key: 'one-key', cost: 1 }])),
  );
  process.stdout.write(`${decisions.filter(([d]) => d.allowed).length}\n`);
  client.disconnect();
});
