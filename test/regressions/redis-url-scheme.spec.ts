import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Redis } from 'ioredis';

import { RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { FailModeController } from '../support/fail-mode.controller.js';
import { createApp, statusesOf } from '../support/nest-app.js';
import { freePort, startRedis, type TestRedis } from '../support/redis-server.js';

// Regression: `REDIS_URL=http://127.0.0.1:16379` was taken by ioredis for the Unix socket path
// `//127.0.0.1:16379`: the app started, warned of a connection failure, and every policy failed open; nothing
// said the scheme was the problem. A URL of another scheme now stops the start, naming it.

let redis: TestRedis;
let dir: string;
let tlsPort: number;
let socket: string;
/** A client of the test's own, to read and clear the server (closed by redis.stop()). */
let admin: Redis;

beforeAll(async () => {
  // One server on three doors: plain TCP, TLS (a self-signed certificate) and a Unix socket.
  dir = mkdtempSync(join(tmpdir(), 'redis-url-'));
  const made = spawnSync('openssl', [
    ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
    ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
  ]);
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${String(made.stderr)}`);
  tlsPort = await freePort();
  socket = join(dir, 'redis.sock');
  redis = await startRedis({
    args: [
      ...['--tls-port', String(tlsPort), '--tls-auth-clients', 'no'],
      ...['--tls-cert-file', join(dir, 'cert.pem'), '--tls-key-file', join(dir, 'key.pem')],
      ...['--unixsocket', socket, '--unixsocketperm', '700'],
    ],
  });
  admin = redis.client();
});
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts an app on `redis`, or rejects with the start's error. */
async function start(options: NonNullable<RateLimitModuleOptions['redis']>) {
  return createApp('express', {
    imports: [RateLimitModule.forRoot({ redis: options })],
    controllers: [FailModeController],
  });
}

describe('regression: a Redis URL of another scheme stops the start', () => {
  it.each([
    ['http', () => `http://127.0.0.1:${redis.port}`],
    ['https', () => `https://:s3cret@127.0.0.1:${redis.port}`],
    ['reddis', () => `reddis://127.0.0.1:${redis.port}`],
  ])('%s:// names the option, the scheme and what is accepted, never the password', async (scheme, url) => {
    const started = start({ url: url() });
    await expect(started).rejects.toThrow(`option "redis.url" (`);
    await expect(started).rejects.toThrow(`has the scheme "${scheme}:", which is not a Redis URL`);
    await expect(started).rejects.toThrow(/Accepted: redis:\/\/.*rediss:\/\/.*host:port.*unix:\/\/\//);
    await expect(started).rejects.not.toThrow('s3cret');
  });

  it('host:port followed by a path is refused: ioredis read the path as a socket', async () => {
    await expect(start({ url: `127.0.0.1:${redis.port}/0` })).rejects.toThrow(
      `for a database, write redis://127.0.0.1:${redis.port}/0`,
    );
  });
});

describe('the accepted forms still start and are decided by the server', () => {
  beforeEach(() => admin.flushall());

  // GET /closed allows 5 a minute and fails closed: 5 × 200 then 429 is the server deciding; 503 would be a
  // connection that failed.
  it.each<[string, () => NonNullable<RateLimitModuleOptions['redis']>]>([
    ['redis://', () => ({ url: `redis://127.0.0.1:${redis.port}` })],
    ['REDIS:// (any case)', () => ({ url: `REDIS://127.0.0.1:${redis.port}` })],
    ['host:port', () => ({ url: `127.0.0.1:${redis.port}` })],
    [
      'rediss:// (TLS)',
      () => ({ url: `rediss://127.0.0.1:${tlsPort}`, options: { tls: { rejectUnauthorized: false } } }),
    ],
    ['a socket path', () => ({ url: socket })],
    ['unix:///path', () => ({ url: `unix://${socket}` })],
  ])('%s', async (_form, options) => {
    const { app } = await start(options());
    try {
      expect(await statusesOf(app, '/closed', 6)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(await admin.dbsize()).toBeGreaterThan(0);
    } finally {
      await app.close();
    }
  });
});
