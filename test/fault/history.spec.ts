import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { validatePolicy, type RateLimitPolicy } from '../../lib/index.js';
import { type Admission, violations } from '../support/history.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Every decision of four app processes (the built package) on one Redis, while Redis is paused (SIGSTOP,
// SIGCONT) and killed and restarted, recorded with when it was asked and answered, and checked against each
// algorithm's bound over every window (test/support/history.ts). The Redis keeps an append-only file synced on
// every write, so a restart loses nothing it acknowledged; every policy fails closed, so an outage admits
// nothing: no window is exempt. With and without leases.

const INSTANCES = 4;
const POLICIES: Record<string, RateLimitPolicy> = {
  fixed: { algorithm: 'fixed-window', limit: 10, window: 500 },
  counter: { algorithm: 'sliding-window-counter', limit: 10, window: 500 },
  log: { algorithm: 'sliding-window-log', limit: 10, window: 500 },
  bucket: { algorithm: 'token-bucket', limit: 10, window: 500, burst: 10 },
  gcra: { algorithm: 'gcra', limit: 10, window: 500, burst: 10 },
  quota: { algorithm: 'quota', period: 'month', limit: 100 },
  concurrency: { algorithm: 'concurrency', limit: 3, window: 10_000 },
};

interface History {
  readonly records: Record<string, [number, number, number][]>;
  readonly runs: [number, number][];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The fleet: four processes, told to go and to stop together; their histories once stopped. */
class Fleet {
  private readonly children: ChildProcessWithoutNullStreams[];
  private readonly outputs: string[];

  constructor(redis: object, lease: number) {
    const script = fileURLToPath(new URL('../support/history-child.mjs', import.meta.url));
    const config = JSON.stringify({ redis, lease, policies: POLICIES });
    this.children = Array.from({ length: INSTANCES }, () => spawn(process.execPath, [script, config]));
    this.outputs = this.children.map(() => '');
    this.children.forEach((child, i) => {
      child.stderr.pipe(process.stderr);
      child.stdout.on('data', (chunk: Buffer) => (this.outputs[i] += chunk.toString()));
    });
  }

  async ready(): Promise<void> {
    while (!this.outputs.every((out) => out.startsWith('ready\n'))) await sleep(20);
  }

  go(): void {
    for (const child of this.children) child.stdin.write('go\n');
  }

  async stop(): Promise<History[]> {
    const exits = this.children.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of this.children) child.stdin.write('stop\n');
    await Promise.all(exits);
    return this.outputs.map((out) => JSON.parse(out.trim().split('\n').at(-1) as string) as History);
  }
}

describe('the history of a fleet on one Redis through faults, checked against every algorithm', () => {
  let dir: string;
  let redis: TestRedis;
  const args = () => ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-history-'));
    redis = await startRedis({ args: args() });
  });
  afterEach(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['without leases', 0],
    ['with leases of 5', 5],
  ])(
    '%s: no window admits more than the algorithm allows, through a pause and a kill of Redis',
    async (_, lease) => {
      const fleet = new Fleet({ url: redis.url }, lease);
      await fleet.ready();
      fleet.go();
      await sleep(1500);
      redis.process.kill('SIGSTOP');
      await sleep(1000);
      redis.process.kill('SIGCONT');
      await sleep(1500);
      redis.process.kill('SIGKILL');
      await new Promise((resolve) => redis.process.once('exit', resolve));
      await sleep(500);
      redis = await startRedis({ port: redis.port, args: args() });
      await sleep(2000);
      const histories = await fleet.stop();

      const report: string[] = [];
      for (const [route, policy] of Object.entries(POLICIES)) {
        const resolved = validatePolicy({ ...policy, name: route });
        const records = histories.flatMap((h) => h.records[route] ?? []);
        const admitted: Admission[] =
          policy.algorithm === 'concurrency'
            ? histories.flatMap((h) => h.runs.map(([from, to]) => ({ from, to, cost: 1 })))
            : records.filter(([, , status]) => status === 200).map(([from, to]) => ({ from, to, cost: 1 }));
        const statuses = new Set(records.map(([, , status]) => status));
        // the store decided (200 and 429), and the outages refused (503); nothing else was answered
        expect({ route, statuses: [...statuses].sort() }).toEqual({ route, statuses: [200, 429, 503] });
        expect(violations(resolved, admitted)).toEqual([]);
        report.push(`${route} ${admitted.length}/${records.length}`);
      }
      process.stdout.write(`history ${lease === 0 ? 'without leases' : `lease ${lease}`}: ${report.join(', ')}\n`);
    },
    60_000,
  );
});
