import { Controller, Get } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import type { PoolClient } from 'pg';
import request from 'supertest';

import {
  MemoryRateLimitStore,
  RateLimit,
  RateLimitModule,
  type RateLimitDecisionEvent,
  RateLimitService,
  RateLimitStore,
  RedisRateLimitStore,
} from '../../lib/index.js';
import { feedChannel } from '../../lib/stores/postgres/notify-changes.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { CapturingLogger } from '../support/log-lines.js';
import { createApp } from '../support/nest-app.js';
import { type TestSchema } from '../support/postgres.js';
import { type StoreName, STORES, storeOptions, storeServers } from '../support/store-options.js';
import { waitFor } from '../support/wait.js';

// Regression (issue 31, "Secrets in the keyspace"): the value a key function returns was stored raw in the
// store's key, e.g. `trialport:{short@ItemsController.list:sk_live_SECRET123}`: every API key a team limits
// by sat in plain text in Redis (and in PostgreSQL's state table, and the memory store's Map), readable by
// anyone with read access or a copy of a backup. Identities are now a keyed hash in every store, the built-in
// ones too; `readableKeys: true` keeps them readable; RateLimitService and onDecision keep the raw identity.

const API_KEY = 'sk_live_SECRET123';
const ADDRESS = '127.0.0.1';
const SECRET = 'the-tests-own-identity-secret-0123456789';
const PER_KEY = 'short@ItemsController.list';
/** What the two policies' keys are made of: the id (with the route for `scope: 'route'`) and the shape. */
const PER_KEY_POLICY = { id: PER_KEY, shape: 'fw1m' };
const PER_IP_POLICY = { id: 'per-ip', shape: 'gcra1m' };

type Req = { headers: Record<string, string | undefined> };

@Controller('items')
class ItemsController {
  @Get()
  @RateLimit({
    name: 'short',
    algorithm: 'fixed-window',
    limit: 100,
    window: '1m',
    scope: 'route',
    key: (ctx) => ctx.switchToHttp().getRequest<Req>().headers['x-api-key'],
  })
  @RateLimit({ name: 'per-ip', algorithm: 'gcra', limit: 100, window: '1m', key: 'ip' })
  list() {
    return 'ok';
  }
}

/** Every key under `prefix`, by SCAN. */
async function scanKeys(client: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys.sort();
}

/** Every row of the store's tables under `prefix`, as text (every column: the key, the state, the expiry). */
async function rowsOf(db: TestSchema, prefix: string): Promise<string[]> {
  const rows: string[] = [];
  for (const table of ['rate_limit_state', 'rate_limit_quota_usage']) {
    const result = await db.pool.query<{ row: string }>(
      `SELECT t::text AS row FROM ${db.schema}.${table} t WHERE starts_with(t.key, $1)`,
      [prefix],
    );
    rows.push(...result.rows.map((r) => r.row));
  }
  return rows.sort();
}

/** The hashed identity of a storage key: 16 base64url characters. */
const hashOf = (key: string): string => /:([\w-]{16})\}$/.exec(key)?.[1] ?? `no hash in ${key}`;

/** The keys of the memory store's Map (`<policy id>\n<identity as stored>`): private, read for this test. */
const memoryKeys = (store: RateLimitStore): string[] => [
  ...(store as unknown as { entries: Map<string, unknown> }).entries.keys(),
];

describe('regression: secrets in the keyspace', () => {
  const servers = storeServers();

  /** An app on `store` (under a prefix of its own), and what its store holds after requests with an API key. */
  async function afterRequests(store: StoreName, extra: { readableKeys?: boolean; identitySecret?: string }) {
    const options = storeOptions(store, servers);
    const keyPrefix = options.keyPrefix as string;
    const events: RateLimitDecisionEvent[] = [];
    const logger = new CapturingLogger();
    const { app } = await createApp(
      'express',
      {
        imports: [RateLimitModule.forRoot({ ...options, ...extra, onDecision: (e) => events.push(e) })],
        controllers: [ItemsController],
      },
      undefined,
      { logger },
    );
    try {
      for (let i = 0; i < 3; i++) {
        expect((await request(app.getHttpServer()).get('/items').set('x-api-key', API_KEY)).status).toBe(200);
      }
      const held =
        store === 'redis'
          ? await scanKeys(servers.redis.client(), keyPrefix)
          : store === 'postgres'
            ? await rowsOf(servers.db, keyPrefix)
            : memoryKeys(app.get<RateLimitStore>(RateLimitStore, { strict: false }));
      const service = app.get(RateLimitService);
      // What the store keeps beside state: the policies each instance records at start (never an identity).
      const metadata =
        store === 'redis'
          ? await servers.redis.client().hvals(`${keyPrefix}policies`)
          : store === 'postgres'
            ? (
                await servers.db.pool.query<{ row: string }>(
                  `SELECT t::text AS row FROM ${servers.db.schema}.rate_limit_policy t WHERE key_prefix = $1`,
                  [keyPrefix],
                )
              ).rows.map((r) => r.row)
            : [];
      if (store !== 'memory') expect(metadata.length).toBeGreaterThan(0);
      return { app, keyPrefix, events, logger, held, metadata, service };
    } catch (error) {
      await app.close();
      throw error;
    }
  }

  describe.each(STORES)('on the %s store', (store) => {
    it('holds no identity by default: every key is the keyed hash of its identity, the built-in ones too', async () => {
      const { app, keyPrefix, events, held, metadata, service } = await afterRequests(store, {});
      try {
        for (const kept of [held, metadata]) {
          expect(kept.join('\n')).not.toContain(API_KEY);
          expect(kept.join('\n')).not.toContain(ADDRESS);
        }
        const hashed = [
          storageKey(keyPrefix, PER_KEY_POLICY, API_KEY),
          storageKey(keyPrefix, PER_IP_POLICY, `ip:${ADDRESS}`),
        ];
        if (store === 'redis') expect(held).toEqual([...hashed, `${keyPrefix}policies`].sort());
        if (store === 'postgres') for (const key of hashed) expect(held.some((row) => row.includes(key))).toBe(true);
        if (store === 'memory') {
          expect(held.sort()).toEqual(
            [`${PER_KEY}\n${hashOf(hashed[0] ?? '')}`, `per-ip\n${hashOf(hashed[1] ?? '')}`].sort(),
          );
        }
        // RateLimitService and onDecision still take and give the raw identity
        expect(events.filter((e) => e.policy === 'short').map((e) => e.key)).toEqual([API_KEY, API_KEY, API_KEY]);
        expect(await service.peek(PER_KEY, API_KEY)).toMatchObject({ remaining: 97 });
        expect(await service.peek('per-ip', `ip:${ADDRESS}`)).toMatchObject({ remaining: 97 });
      } finally {
        await app.close();
      }
    });

    it('holds the identities as they are with readableKeys: true', async () => {
      const { app, keyPrefix, held } = await afterRequests(store, { readableKeys: true });
      try {
        expect(held.join('\n')).toContain(API_KEY);
        const readable = [`${keyPrefix}{${PER_KEY}|fw1m:${API_KEY}}`, `${keyPrefix}{per-ip|gcra1m:ip:${ADDRESS}}`];
        expect(readable).toEqual([
          storageKey(keyPrefix, PER_KEY_POLICY, API_KEY, { readableKeys: true }),
          storageKey(keyPrefix, PER_IP_POLICY, `ip:${ADDRESS}`, { readableKeys: true }),
        ]);
        if (store === 'redis') expect(held).toEqual([...readable, `${keyPrefix}policies`].sort());
        if (store === 'postgres') for (const key of readable) expect(held.some((row) => row.includes(key))).toBe(true);
        if (store === 'memory')
          expect(held.sort()).toEqual([`${PER_KEY}\nfw1m\n${API_KEY}`, `per-ip\ngcra1m\nip:${ADDRESS}`].sort());
      } finally {
        await app.close();
      }
    });

    it('hashes under identitySecret, which appears in no key, no row and no log line', async () => {
      const { app, keyPrefix, held, logger } = await afterRequests(store, { identitySecret: SECRET });
      try {
        const withSecret = storageKey(keyPrefix, PER_KEY_POLICY, API_KEY, { identitySecret: SECRET });
        expect(withSecret).not.toBe(storageKey(keyPrefix, PER_KEY_POLICY, API_KEY));
        if (store !== 'memory') expect(held.some((entry) => entry.includes(withSecret))).toBe(true);
        else expect(held).toContain(`${PER_KEY}\n${hashOf(withSecret)}`);
        expect(held.join('\n')).not.toContain(API_KEY);
        expect(held.join('\n')).not.toContain(SECRET);
        expect(logger.lines.length).toBeGreaterThan(0);
        expect(logger.lines.join('\n')).not.toContain(SECRET);
      } finally {
        await app.close();
      }
    });
  });

  it('announces changes between instances by the hashed key, never the raw identity (Redis pub/sub)', async () => {
    const { app, keyPrefix, service } = await afterRequests('redis', {});
    const listener = servers.redis.client();
    try {
      const messages: string[] = [];
      listener.on('message', (_channel: string, message: string) => messages.push(message));
      await listener.subscribe(`${keyPrefix}changes`);
      await service.reset(PER_KEY, API_KEY);
      await waitFor(() => messages.length > 0, 'the announcement of the reset');
      const hashed = hashOf(storageKey(keyPrefix, PER_KEY_POLICY, API_KEY));
      expect(messages).toEqual([JSON.stringify([[PER_KEY, hashed]])]);
    } finally {
      await listener.unsubscribe(); // redis.stop() closes it
      await app.close();
    }
  });

  it('announces changes between instances by the hashed key, never the raw identity (PostgreSQL NOTIFY)', async () => {
    const { app, keyPrefix, service } = await afterRequests('postgres', {});
    let listener: PoolClient | undefined;
    try {
      listener = await servers.db.pool.connect();
      const messages: string[] = [];
      listener.on('notification', ({ payload }) => messages.push(payload ?? ''));
      await listener.query(`LISTEN "${feedChannel(servers.db.schema, keyPrefix)}"`);
      await service.reset(PER_KEY, API_KEY);
      await waitFor(() => messages.length > 0, 'the announcement of the reset');
      const hashed = hashOf(storageKey(keyPrefix, PER_KEY_POLICY, API_KEY));
      expect(messages).toEqual([JSON.stringify([[PER_KEY, hashed]])]);
    } finally {
      listener?.release(true);
      await app.close();
    }
  });

  it('never shows an identitySecret in an error', async () => {
    const short = 'too-short-secret';
    const client = servers.redis.client();
    await client.ping();
    const attempts: (() => unknown)[] = [
      () => new MemoryRateLimitStore({ identitySecret: short.slice(0, 10) }),
      () => new RedisRateLimitStore({ client, identitySecret: short.slice(0, 15) }),
      () => new MemoryRateLimitStore({ identitySecret: 42 as unknown as string }),
    ];
    for (const attempt of attempts) {
      expect(attempt).toThrow(/identitySecret must be a string of at least 16 characters/);
      try {
        attempt();
      } catch (error) {
        expect(`${(error as Error).message}\n${(error as Error).stack ?? ''}`).not.toContain('too-short');
      }
    }
    const messages: string[] = [];
    for (const options of [
      { identitySecret: short.slice(0, 12) },
      { identitySecret: SECRET, store: new MemoryRateLimitStore() },
    ]) {
      await Test.createTestingModule({ imports: [RateLimitModule.forRoot(options)] })
        .compile()
        .then(
          () => messages.push('started'),
          (error: Error) => messages.push(`${error.message}\n${error.stack ?? ''}`),
        );
    }
    expect(messages).toEqual([
      expect.stringMatching(/identitySecret must be a string of at least 16 characters.*got a string of 12 characters/),
      expect.stringMatching(
        /option "identitySecret" applies to the stores the module makes.*give it to that store's options/,
      ),
    ]);
    expect(messages.join('\n')).not.toContain(short.slice(0, 12));
    expect(messages.join('\n')).not.toContain(SECRET);
  });
});
