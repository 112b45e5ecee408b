import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

import { Redis, type RedisOptions } from 'ioredis';

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

/** The spec's own redis-server (see redisForSpec), with one client to it that the spec shares. */
export interface SpecRedis extends Omit<TestRedis, 'stop'> {
  /** A client made when the server started: for the stores under test and for reading what they wrote. */
  readonly shared: Redis;
}

/**
 * A redis-server of the spec's own, started before its tests and stopped (with its clients) after them; read it
 * in hooks and tests, not when the file loads.
 * @example const redis = redisForSpec(); … new RedisRateLimitStore({ client: redis.shared, clock })
 */
export function redisForSpec(): SpecRedis {
  let started: { server: TestRedis; shared: Redis } | undefined;
  beforeAll(async () => {
    const server = await startRedis();
    started = { server, shared: server.client() };
  });
  afterAll(() => started?.server.stop());
  const current = (): { server: TestRedis; shared: Redis } => {
    if (started === undefined) throw new Error('redisForSpec: the server is started in beforeAll');
    return started;
  };
  return {
    get port() {
      return current().server.port;
    },
    get url() {
      return current().server.url;
    },
    get process() {
      return current().server.process;
    },
    get shared() {
      return current().shared;
    },
    client: (options) => current().server.client(options),
  };
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

/** The process id of the Redis answering on `port` (INFO server), or undefined while none answers. */
function serverPid(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (pid: number | undefined): void => {
      socket.destroy();
      resolve(pid);
    };
    socket.once('error', () => done(undefined));
    socket.once('end', () => done(undefined));
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      const pid = /process_id:(\d+)\r\n/.exec(reply)?.[1];
      if (pid !== undefined) done(Number(pid));
      else if (reply.startsWith('-')) done(undefined); // still loading
    });
  });
}

/**
 * A redis-server that exited before it answered, or a port on which another process answers: the port (or a
 * cluster node's bus port, port + 10000) was taken between freePort() and the server's bind.
 */
export class RedisPortTaken extends Error {}

/** How long a redis-server may take to answer. */
const START_TIMEOUT_MS = 10_000;

/**
 * Starts `redis-server` on a free loopback port (or `port`) and waits until it answers PING. A free port can be
 * taken by another suite's server or client before the server binds it: then another one is tried.
 */
export async function startRedis(options: { port?: number; args?: string[] } = {}): Promise<TestRedis> {
  assertRedisServerInstalled();
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      return await launch(port, options.args ?? []);
    } catch (error) {
      if (!(error instanceof RedisPortTaken) || options.port !== undefined || attempt >= 5) throw error;
    }
  }
}

async function launch(port: number, args: string[]): Promise<TestRedis> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const pid = await serverPid(port);
    if (pid === child.pid) break;
    const gone = child.exitCode !== null || child.signalCode !== null;
    if (gone || pid !== undefined || Date.now() >= deadline) {
      process.removeListener('exit', killOnExit);
      child.kill('SIGKILL');
      if (gone || pid !== undefined) throw new RedisPortTaken(`redis-server could not take port ${port}`);
      throw new Error(`timed out after ${START_TIMEOUT_MS} ms waiting for redis-server on port ${port}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
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
