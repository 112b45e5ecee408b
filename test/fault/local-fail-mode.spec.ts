import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// failMode 'local' across two processes (two instances of an app on the built package, `instances: 2`) on one
// real redis-server: /api allows 10 per minute per client, so 5 per instance while Redis is away. Killed, each
// instance admits exactly its 5 a window; restarted, the two share the store's 10 again; paused (SIGSTOP), the
// same 5 each, and every request is answered (the store's timeout, then the breaker); continued, the store's
// 10 again. The instances' clocks stand still at the time the test gives them, so a window ends when the test
// says. Admissions are counted; nothing is timed.

const SCRIPT = fileURLToPath(new URL('../support/local-fail-app.mjs', import.meta.url));
const WINDOW_MS = 60_000;
/** Requests each instance sends in a window: more than the store's limit for the two, let alone a local one. */
const SENT = 8;
/** A request not answered by then has hung on the limiter, which must never happen. */
const HUNG_MS = 10_000;

interface Instance {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  readonly port: number;
  readonly lines: Interface;
}

async function startInstance(redisUrl: string): Promise<Instance> {
  const child = spawn(process.execPath, [SCRIPT, redisUrl], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the app exited with ${code} before it was ready`)));
  });
  const port = Number(/^ready (\d+)$/.exec(first)?.[1]);
  if (!Number.isInteger(port)) throw new Error(`the app said ${JSON.stringify(first)}, not "ready <port>"`);
  return { child, port, lines };
}

/** Sets the instance's clock; resolves once it has. */
async function setTime(instance: Instance, ms: number): Promise<void> {
  const answered = new Promise<string>((resolve) => instance.lines.once('line', resolve));
  instance.child.stdin.write(`time ${ms}\n`);
  expect(await answered).toBe('ok');
}

async function status(instance: Instance, path: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${instance.port}${path}`, { signal: AbortSignal.timeout(HUNG_MS) });
  await res.arrayBuffer();
  return res.status;
}

/** Sends SENT requests to /api, one after another, and returns their statuses. */
async function burst(instance: Instance): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < SENT; i++) statuses.push(await status(instance, '/api'));
  return statuses;
}

const admitted = (statuses: readonly number[]): number => statuses.filter((s) => s === 200).length;

describe("failMode 'local' over two processes on one Redis", () => {
  let redis: TestRedis;
  let instances: Instance[] = [];
  let nowMs = 1_700_000_040_000; // the start of a minute

  beforeAll(async () => {
    redis = await startRedis();
    instances = await Promise.all([startInstance(redis.url), startInstance(redis.url)]);
  });
  afterAll(async () => {
    for (const { child } of instances) {
      child.stdin.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    }
    await redis.stop();
  });

  async function nextWindow(): Promise<void> {
    nowMs += WINDOW_MS;
    await Promise.all(instances.map((instance) => setTime(instance, nowMs)));
  }
  /** Both instances send a burst at once; each one's statuses. */
  const bothBurst = (): Promise<number[][]> => Promise.all(instances.map(burst));
  /** Until each instance's fail-closed /probe is answered by the store. */
  const storeAnswersBoth = (): Promise<void[]> =>
    Promise.all(
      instances.map((instance) =>
        waitFor(async () => (await status(instance, '/probe')) === 200, 'the store to answer the instance', 20_000),
      ),
    );

  it('killed: exactly the local limit in each instance; restarted: the shared limit again', async () => {
    await nextWindow();
    const shared = await bothBurst();
    expect(admitted(shared.flat())).toBe(10);
    expect(shared.flat().filter((s) => s !== 200 && s !== 429)).toEqual([]);

    redis.process.kill('SIGKILL');
    await new Promise((resolve) => redis.process.once('exit', resolve));
    for (let window = 0; window < 2; window++) {
      await nextWindow();
      const local = await bothBurst();
      // 5 and 5: ceil(10 / 2) each, not the 8 sent (all open), not 0 (all closed), never a 503
      expect(local.map(admitted)).toEqual([5, 5]);
      expect(local.flat().filter((s) => s !== 200 && s !== 429)).toEqual([]);
    }

    const port = redis.port;
    await redis.stop();
    redis = await startRedis({ port });
    await storeAnswersBoth();
    // The same window: each instance used its 5 locally, which the store never hears of; the restarted Redis
    // is empty, so the two share its 10 (still local, they would admit nothing more).
    const back = await bothBurst();
    expect(admitted(back.flat())).toBe(10);
  }, 90_000);

  it('hung (SIGSTOP): exactly the local limit in each instance, every request answered; continued: the shared limit', async () => {
    await nextWindow();
    redis.process.kill('SIGSTOP');
    try {
      for (let window = 0; window < 2; window++) {
        const local = await bothBurst();
        expect(local.map(admitted)).toEqual([5, 5]);
        expect(local.flat().filter((s) => s !== 200 && s !== 429)).toEqual([]);
        await nextWindow();
      }
    } finally {
      redis.process.kill('SIGCONT');
    }
    await storeAnswersBoth();
    // A new window: what Redis ran late for the paused window's timed-out calls counts in that window only.
    await nextWindow();
    const back = await bothBurst();
    expect(admitted(back.flat())).toBe(10);
  }, 90_000);
});
