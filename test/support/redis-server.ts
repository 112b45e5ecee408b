import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

import { Redis, type RedisOptions } from 'ioredis';

import { waitFor } from './wait.js';

/** A redis-server process of the test's own, on a free loopback port. */
export interface TestRedis {
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  /** A new client to this server (closed by stop()). */
  client(options?: RedisOptions): Redis;
  stop(): Promise<void>;
}

const INSTALL_HINT =
  'redis-server was not found on PATH. The Redis tests start their own redis-server; install it with ' +
  '`sudo apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).';

export function assertRedisServerInstalled(env: NodeJS.ProcessEnv = process.env): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8', env });
  if (probe.error !== undefined || probe.status !== 0) throw new Error(INSTALL_HINT);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('error', () => resolve(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
  });
}

/** Starts `redis-server` on a free loopback port (or `port`) and waits until it answers PING. */
export async function startRedis(options: { port?: number; args?: string[] } = {}): Promise<TestRedis> {
  assertRedisServerInstalled();
  const port = options.port ?? (await freePort());
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...(options.args ?? [])],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  await waitFor(() => ping(port), `redis-server on port ${port}`);
  const clients: Redis[] = [];
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    process: child,
    client(clientOptions: RedisOptions = {}) {
      const client = new Redis({ host: '127.0.0.1', port, ...clientOptions });
      clients.push(client);
      return client;
    },
    async stop() {
      process.removeListener('exit', killOnExit);
      clients.forEach((client) => client.disconnect());
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
