import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { assertRedisServerInstalled, RedisPortTaken, startRedis } from '../support/redis-server.js';

test('without redis-server on PATH, the Redis tests stop with a message saying how to install it', () => {
  const empty = mkdtempSync(join(tmpdir(), 'no-redis-'));
  expect(() => assertRedisServerInstalled({ ...process.env, PATH: empty })).toThrow(
    /redis-server was not found on PATH.*apt-get install redis-server/,
  );
  expect(() => assertRedisServerInstalled()).not.toThrow();
});

// Regression: a Cluster node's port (or its bus port) was taken between freePort() and the bind, and the suite
// waited 10 s for a server that had exited; a port another server holds must never pass for the test's own.
test("a port another redis-server holds is refused as taken, not taken for the test's own server", async () => {
  const other = await startRedis();
  try {
    await expect(startRedis({ port: other.port })).rejects.toBeInstanceOf(RedisPortTaken);
  } finally {
    await other.stop();
  }
});
