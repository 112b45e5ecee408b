import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';

import { nth } from '../support/harness.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

/** The soak: 2 minutes of mixed load on 4 app processes sharing one Redis, restarted once in the middle. */
const PHASE_MS = 40_000;
const CONCURRENCY_PER_APP = 4;
/**
 * The store timeout of the apps. On 2 shared cores, 4 apps under load can leave a healthy Redis call waiting
 * past 100 ms; a timed-out call that Redis still applies would make the totals inexact for reasons that are
 * not the outage. The outage itself fails fast whatever the timeout: the connection is refused or reset.
 */
const STORE_TIMEOUT_MS = 2000;
const EXACT_LIMIT = 30;

interface App {
  process: ChildProcess;
  port: number;
  stderr: string[];
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function get(port: number, path: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, agent, headers: { 'x-key': key }, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function startApp(redisUrl: string): Promise<App> {
  const script = fileURLToPath(new URL('../support/soak-app.mjs', import.meta.url));
  const child = spawn(process.execPath, ['--expose-gc', script, redisUrl, String(STORE_TIMEOUT_MS)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`app exited with ${code}: ${stderr.join('')}`)));
  });
  return { process: child, port, stderr };
}

async function heapOf(app: App): Promise<number> {
  return (JSON.parse((await get(app.port, '/memory', 'm')).body) as { heapUsed: number }).heapUsed;
}

describe('soak', () => {
  let redis: TestRedis;
  const apps: App[] = [];
  afterAll(async () => {
    apps.forEach((app) => app.process.kill('SIGKILL'));
    agent.destroy();
    await redis?.stop();
  });

  it('survives 2 minutes of mixed load on 4 processes and a Redis restart, with exact totals outside the outage', async () => {
    redis = await startRedis();
    for (let i = 0; i < 4; i++) apps.push(await startApp(redis.url));

    /** Runs the mixed load until `untilMs`; `exact` counts the admitted requests per key of the exact policy. */
    async function load(phase: string, untilMs: number, exact: Map<string, number>): Promise<Map<number, number>> {
      const statuses = new Map<number, number>();
      let n = 0;
      const loop = async (app: App, lane: number) => {
        while (performance.now() < untilMs) {
          const i = n++;
          // During the outage every exact request has a key of its own: 200 keys would all reach their limit
          // before Redis is killed (on a fast machine), and the local cache of denials would answer them.
          const key = phase === 'during' ? `${phase}-${i}` : `${phase}-${i % 200}`;
          const path = i % 3 === 0 ? '/exact' : `/mixed?rows=${(i % 7) * 10}`;
          const { status } = await get(app.port, path, i % 3 === 0 ? key : `${phase}-lane-${lane}`);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (path === '/exact' && status === 200) exact.set(key, (exact.get(key) ?? 0) + 1);
        }
      };
      await Promise.all(
        apps.flatMap((app, a) => Array.from({ length: CONCURRENCY_PER_APP }, (_, l) => loop(app, a * 100 + l))),
      );
      return statuses;
    }

    const before = new Map<string, number>();
    const warmUpEnd = performance.now() + 10_000;
    await load('warm', warmUpEnd, new Map());
    const heapAfterWarmUp = await Promise.all(apps.map(heapOf));
    const firstStatuses = await load('before', performance.now() + PHASE_MS - 10_000, before);

    // The outage: Redis killed and restarted on its port while the load goes on.
    const outage = load('during', performance.now() + 20_000, new Map());
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const port = redis.port;
    redis.process.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await redis.stop();
    redis = await startRedis({ port });
    const outageStatuses = await outage;

    const after = new Map<string, number>();
    const lastStatuses = await load('after', performance.now() + PHASE_MS, after);
    const heapAtEnd = await Promise.all(apps.map(heapOf));

    for (const app of apps) {
      expect(app.process.exitCode).toBeNull();
      expect(app.stderr.join('')).not.toMatch(/unhandledRejection|uncaughtException/);
    }
    // outside the outage: every response a decision, and every key admitted exactly its limit across 4 processes
    expect([...firstStatuses.keys()].sort()).toEqual([200, 429]);
    expect([...lastStatuses.keys()].sort()).toEqual([200, 429]);
    for (const counts of [before, after]) {
      expect(counts.size).toBe(200);
      expect([...new Set(counts.values())]).toEqual([EXACT_LIMIT]);
    }
    // during it: fail open (200) or fail closed (503), or a decision, never an error or a hang
    for (const status of outageStatuses.keys()) expect([200, 429, 503]).toContain(status);
    expect(outageStatuses.get(503)).toBeGreaterThan(0);
    // memory flat after warm-up (garbage collected before each reading)
    heapAtEnd.forEach((heap, i) => expect(heap - nth(heapAfterWarmUp, i)).toBeLessThan(16 * 1024 * 1024));
  }, 180_000);
});
