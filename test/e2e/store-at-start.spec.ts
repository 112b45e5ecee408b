import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';

import { RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { createApp } from '../support/nest-app.js';
import { redisForSpec } from '../support/redis-server.js';

const redis = redisForSpec();

/** The lines the module logs at start with these options. */
async function startLines(options: RateLimitModuleOptions): Promise<string[]> {
  const log = jest.spyOn(Logger.prototype, 'log');
  try {
    const { app } = await createApp('express', { imports: [RateLimitModule.forRoot(options)] });
    await app.close();
    return log.mock.calls.map(([message]) => String(message)).filter((m) => m.startsWith('Rate limits in'));
  } finally {
    log.mockRestore();
  }
}

describe('at start, the module says which store it uses', () => {
  it('the in-memory store', async () => {
    expect(await startLines({})).toEqual(['Rate limits in memory (this process only)']);
  });

  it('Redis, where, without the password', async () => {
    const [line] = await startLines({ redis: { url: `redis://:s3cret@127.0.0.1:${redis.port}/0` } });
    expect(line).toBe(`Rate limits in Redis at 127.0.0.1:${redis.port}`);
    expect(line).not.toContain('s3cret');
  });

  it('PostgreSQL, where, without the password', async () => {
    const [line] = await startLines({
      postgres: { connectionString: 'postgres://postgres:hunter2@127.0.0.1:5432/test', schema: 'public' },
    });
    expect(line).toBe('Rate limits in PostgreSQL at postgres://127.0.0.1:5432/test, schema public');
  });
});

// Regression: `redis: { url: process.env.REDIS_URL }` with the variable unset connected to localhost:6379
// without a word.
it.each([undefined, ''])('refuses a redis option whose url is %j, naming the option', async (url) => {
  await expect(createApp('express', { imports: [RateLimitModule.forRoot({ redis: { url } })] })).rejects.toThrow(
    /option "redis" names no server: url is (undefined|empty)/,
  );
});

// Regression (review): options whose only key was misspelt (`hots`) connected to localhost:6379 silently.
it.each([{ hots: 'redis.internal' }, { password: 'secret' }, { host: '' }, { sentinels: [] }])(
  'refuses redis options that name no host, port, path or sentinels (%j)',
  async (options) => {
    await expect(
      createApp('express', { imports: [RateLimitModule.forRoot({ redis: { url: undefined, options } })] }),
    ).rejects.toThrow('option "redis" names no server: url is undefined, and options name no host, port, path');
  },
);
