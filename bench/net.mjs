// Loopback helpers of the benchmarks: a free port, whether a redis-server answers on one, a redis-server of
// their own.
import { spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export function ping(port) {
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

/** FLUSHALL on the redis-server at `port` (so that no variant's keys expire while another is measured). */
export function flushAll(port) {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('error', reject);
    socket.once('connect', () => socket.write('FLUSHALL SYNC\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      if (data.toString().startsWith('+OK')) resolve();
      else reject(new Error(`FLUSHALL answered ${data.toString().trim()}`));
    });
  });
}

/** A redis-server of the benchmark's own on a free loopback port, killed when the process exits. */
export async function startRedisServer() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  process.once('exit', () => child.kill('SIGKILL'));
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (Date.now() > deadline) throw new Error(`redis-server did not start on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { port, pid: child.pid, url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}
