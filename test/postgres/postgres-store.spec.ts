import { createServer, type Server, type Socket } from 'node:net';

import { type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimitCircuitOpenError, RateLimitModule, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { nth } from '../support/harness.js';
import { createApp, statusesOf } from '../support/nest-app.js';
import { migratedSchema, statementsDuring } from '../support/postgres.js';
import { policyOf } from '../support/policies.js';
import { consumeFromProcesses } from '../support/processes.js';
import { freePort } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { TEST_START_MS } from '../support/time.js';

const db = migratedSchema('s');
const store = db.store;
let prefixes = 0;

describe.each(ALGORITHMS)('%s on PostgreSQL under concurrency', (algorithm) => {
  const policy = validatePolicy(policyOf(algorithm, { name: 'flood', limit: 100, window: '1m' }));

  it('admits exactly 100 of 200 concurrent consumes from one process', async () => {
    const s = store({ clock: new FakeClock(TEST_START_MS) });
    const decisions = await Promise.all(
      Array.from({ length: 200 }, () => s.consume([{ policy, key: 'one-key', cost: 1 }])),
    );
    expect(decisions.filter((r) => nth(r, 0).allowed)).toHaveLength(100);
  });

  it('admits exactly 100 of 200 consumes from 4 processes at once', async () => {
    expect(await consumeFromProcesses(`pg:${db.schema}`, algorithm, `pp${++prefixes}:`)).toBe(100);
  });
});

describe('PostgresRateLimitStore', () => {
  it('decides several policies in one statement, all-or-nothing (read back from the table)', async () => {
    const keyPrefix = `s${++prefixes}:`;
    const s = store({ clock: new FakeClock(TEST_START_MS), keyPrefix });
    const wide = validatePolicy({ name: 'wide', algorithm: 'token-bucket', limit: 100, window: '1m' });
    const narrow = validatePolicy({ name: 'narrow', algorithm: 'fixed-window', limit: 1, window: '1m' });
    const odd = validatePolicy({ name: 'odd', algorithm: 'sliding-window-log', limit: 5, window: '1m' });
    await s.consume([{ policy: narrow, key: 'u', cost: 1 }]);
    const stateOf = async (name: 'narrow' | 'wide' | 'odd') =>
      (
        await db.pool.query(`SELECT state FROM ${db.schema}.rate_limit_state WHERE key = $1`, [
          storageKey(keyPrefix, { narrow, wide, odd }[name], 'u'),
        ])
      ).rows;
    expect(await stateOf('narrow')).toHaveLength(1);
    const {
      result: [w, o, n],
      statements,
    } = await statementsDuring(db.pool, () =>
      s.consume([
        { policy: wide, key: 'u', cost: 5 },
        { policy: odd, key: 'u', cost: 1 },
        { policy: narrow, key: 'u', cost: 1 },
      ]),
    );
    expect(statements).toHaveLength(1);
    expect([w?.allowed, o?.allowed, n?.allowed]).toEqual([true, true, false]);
    expect(await stateOf('wide')).toEqual([]);
    expect(await stateOf('odd')).toEqual([]);
  });

  it('takes time from the database with clock: "store"', async () => {
    const s = store({ clock: 'store' });
    const policy = validatePolicy({ name: 'p', algorithm: 'fixed-window', limit: 10, window: '1h' });
    const d = nth(await s.consume([{ policy, key: 'u', cost: 1 }]), 0);
    const { rows } = await db.pool.query<{ now: string }>(
      'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now',
    );
    const now = Number(nth(rows, 0).now);
    const windowEnd = (Math.floor(now / 3_600_000) + 1) * 3_600_000;
    expect(Math.abs(now + d.resetMs - windowEnd)).toBeLessThan(2000);
  });

  it('prunes expired rows in the background, and the table does not grow under a stream of distinct keys', async () => {
    const clock = new FakeClock(TEST_START_MS);
    const keyPrefix = `prune${++prefixes}:`;
    const s = store({ clock, keyPrefix, ttlSlackMs: 0, pruneIntervalMs: 100, pruneBatch: 50 });
    const policy = validatePolicy({ name: 'p', algorithm: 'gcra', limit: 10, window: '1s' });
    const rows = async () =>
      Number(
        (
          await db.pool.query(`SELECT count(*) AS n FROM ${db.schema}.rate_limit_state WHERE key LIKE $1`, [
            `${keyPrefix}%`,
          ])
        ).rows[0].n,
      );
    for (let i = 0; i < 300; i++) await s.consume([{ policy, key: `k${i}`, cost: 1 }]);
    expect(await rows()).toBe(300);
    clock.advance(1000); // every row has expired (one unit of 10 per second refills in 100 ms)
    await waitFor(async () => (await rows()) === 0, 'the pruner to delete the expired rows', 5000);
    // a stream of distinct keys with time moving on: the table holds only what is live
    const sizes: number[] = [];
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 100; i++) await s.consume([{ policy, key: `r${round}-${i}`, cost: 1 }]);
      sizes.push(await rows());
      clock.advance(1000);
      await waitFor(async () => (await rows()) === 0, 'the pruner', 5000);
    }
    expect(sizes).toEqual([100, 100, 100, 100, 100]);
  });
});

describe('the module on PostgreSQL', () => {
  it('creates its schema with migrate: true and limits through it', async () => {
    const schema = `${db.schema}_m`;
    const { app } = await createApp('express', {
      imports: [RateLimitModule.forRoot({ postgres: { connectionString: db.url, schema, migrate: true } })],
      controllers: [FailModeController],
    });
    expect(await statusesOf(app, '/closed', 6)).toEqual([200, 200, 200, 200, 200, 429]);
    await app.close();
    await db.pool.query(`DROP SCHEMA ${schema} CASCADE`);
  });

  describe.each(['nothing listens', 'a server never answers'])('when %s', (situation) => {
    let server: Server | undefined;
    const sockets: Socket[] = [];
    let app: INestApplication;
    const reasons: unknown[] = [];
    beforeAll(async () => {
      const port = await freePort();
      if (situation === 'a server never answers') {
        server = createServer((socket) => sockets.push(socket));
        await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
      }
      ({ app } = await createApp('express', {
        imports: [
          RateLimitModule.forRoot({
            postgres: { connectionString: `postgres://postgres@127.0.0.1:${port}/test` },
            timeout: 100,
            onError: (error) => reasons.push(error),
          }),
        ],
        controllers: [FailModeController],
      }));
    });
    afterAll(async () => {
      await app.close();
      sockets.forEach((socket) => socket.destroy());
      server?.close();
    });

    it("keeps the fail modes, each answer within the module's timeout", async () => {
      for (let i = 0; i < 10; i++) {
        const open = await request(app.getHttpServer()).get('/open');
        const closed = await request(app.getHttpServer()).get('/closed');
        expect([open.status, closed.status]).toEqual([200, 503]);
      }
      // Counted, not timed (a loaded machine slows the round trip, not this): a refused connection fails at
      // once, with the driver's error as it is; a server that never answers is cut off by the module's timeout
      // (the driver would wait for ever), the consumes queued behind its statement with it, then the open
      // breaker.
      const said = (error: unknown) => {
        if (error instanceof RateLimitCircuitOpenError) return 'breaker open';
        if (/waited for a statement out for more than 100 ms/.test((error as Error).message)) return 'queued behind it';
        return (error as { code?: string }).code ?? (error as Error).name;
      };
      const kinds = new Set(reasons.map(said));
      if (situation === 'nothing listens') expect([...kinds].sort()).toEqual(['ECONNREFUSED', 'breaker open']);
      else {
        expect(kinds.has('RateLimitStoreTimeoutError') && kinds.has('breaker open')).toBe(true);
        kinds.delete('queued behind it');
        expect([...kinds].sort()).toEqual(['RateLimitStoreTimeoutError', 'breaker open']);
      }
    });
  });
});
