import { Test } from '@nestjs/testing';
import pg from 'pg';

import { PostgresRateLimitStore, RateLimitModule } from '../../lib/index.js';

// A Pool connects only when asked for a connection: none of these tests reaches a server.
const pool = new pg.Pool({ host: '127.0.0.1', port: 1 });
afterAll(() => pool.end());

type Options = ConstructorParameters<typeof PostgresRateLimitStore>[0];
type Checked = 'pruneBatch' | 'pruneIntervalMs' | 'ttlSlackMs';

describe('PostgresRateLimitStore options', () => {
  it.each<[Checked, number, string]>([
    ['pruneBatch', 0, 'pruneBatch must be an integer >= 1, got 0'],
    ['pruneBatch', -5, 'pruneBatch must be an integer >= 1, got -5'],
    ['pruneBatch', 2.5, 'pruneBatch must be an integer >= 1, got 2.5'],
    ['pruneBatch', NaN, 'pruneBatch must be an integer >= 1, got NaN'],
    ['pruneBatch', Infinity, 'pruneBatch must be an integer >= 1, got Infinity'],
    ['pruneIntervalMs', -1, 'pruneIntervalMs must be an integer from 0 to 2147483647, got -1'],
    ['pruneIntervalMs', 0.5, 'pruneIntervalMs must be an integer from 0 to 2147483647, got 0.5'],
    ['pruneIntervalMs', 2 ** 31, 'pruneIntervalMs must be an integer from 0 to 2147483647, got 2147483648'],
    ['ttlSlackMs', -1, 'ttlSlackMs must be an integer >= 0, got -1'],
    ['ttlSlackMs', 1.5, 'ttlSlackMs must be an integer >= 0, got 1.5'],
    ['ttlSlackMs', NaN, 'ttlSlackMs must be an integer >= 0, got NaN'],
  ])('reject %s: %p', (name, value, message) => {
    expect(() => new PostgresRateLimitStore({ pool, [name]: value })).toThrow(
      new TypeError(`nest-rate-limit: ${message}`),
    );
  });

  it('name a string where a number belongs (an environment variable passed as it is)', () => {
    const options = { pool, pruneBatch: '100' } as unknown as Options;
    expect(() => new PostgresRateLimitStore(options)).toThrow(
      new TypeError('nest-rate-limit: pruneBatch must be an integer >= 1, got "100"'),
    );
  });

  it('accept the bounds and the defaults', async () => {
    const stores = [
      new PostgresRateLimitStore({ pool }),
      new PostgresRateLimitStore({ pool, pruneBatch: 1, pruneIntervalMs: 0, ttlSlackMs: 0 }),
      new PostgresRateLimitStore({ pool, pruneIntervalMs: 2 ** 31 - 1 }),
    ];
    await Promise.all(stores.map((store) => store.close()));
  });

  it.each<[string, NonNullable<Parameters<typeof RateLimitModule.forRoot>[0]['postgres']>, string]>([
    ['pruneBatch: 0, with a pool', { pool, pruneBatch: 0 }, 'pruneBatch must be an integer >= 1, got 0'],
    [
      'pruneIntervalMs: -1, with a connection string',
      { connectionString: 'postgres://postgres@127.0.0.1:1/test', pruneIntervalMs: -1 },
      'pruneIntervalMs must be an integer from 0 to 2147483647, got -1',
    ],
    ['ttlSlackMs: 0.5, with a pool', { pool, ttlSlackMs: 0.5 }, 'ttlSlackMs must be an integer >= 0, got 0.5'],
  ])('reject a bad value given through RateLimitModule.forRoot at start (%s)', async (_, postgres, message) => {
    const start = Test.createTestingModule({ imports: [RateLimitModule.forRoot({ postgres })] }).compile();
    await expect(start).rejects.toThrow(new TypeError(`nest-rate-limit: ${message}`));
  });
});
