import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { assertRedisServerInstalled } from '../support/redis-server.js';

test('without redis-server on PATH, the Redis tests stop with a message saying how to install it', () => {
  const path = process.env.PATH;
  process.env.PATH = mkdtempSync(join(tmpdir(), 'no-redis-'));
  try {
    expect(() => assertRedisServerInstalled()).toThrow(
      /redis-server was not found on PATH.*apt-get install redis-server/,
    );
  } finally {
    process.env.PATH = path;
  }
  expect(() => assertRedisServerInstalled()).not.toThrow();
});
