import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { assertRedisServerInstalled } from '../support/redis-server.js';

test('without redis-server on PATH, the Redis tests stop with a message saying how to install it', () => {
  const empty = mkdtempSync(join(tmpdir(), 'no-redis-'));
  expect(() => assertRedisServerInstalled({ ...process.env, PATH: empty })).toThrow(
    /redis-server was not found on PATH.*apt-get install redis-server/,
  );
  expect(() => assertRedisServerInstalled()).not.toThrow();
});
