import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { validatePolicy, type RateLimitPolicy } from '../../lib/index.js';
import { type Admission, type Exempt, violations } from '../support/history.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startSentinel, type TestSentinel } from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';

// Every decision of four app processes (the built package) on one Redis, while Redis is paused (SIGSTOP,
// SIGCONT) and killed and restarted, recorded with when it was asked and answered, and checked against each
// algorithm's bound over every window (test/support/history.ts). The Redis keeps an append-only file synced on
// every write, so a restart loses nothing it acknowledged; every policy fails closed, so an outage admits
// nothing: no window is exempt. With and without leases.

const INSTANCES = 4;
const POLICIES: Record<string, RateLimitPolicy> = {
  fixed: { algorithm: 'fixed-window', limit: 6, window: 500 },
  counter: { algorithm: 'sliding-window-counter', limit: 6, window: 500 },
  log: { algorithm: 'sliding-window-log', limit: 6, window: 500 },
  bucket: { algorithm: 'token-bucket', limit: 6, window: 500, burst: 6 },
  gcra: { algorithm: 'gcra', limit: 6, window: 500, burst: 6 },
  quota: { algorithm: 'quota', period: 'month', limit: 30 },
  // a lease that a kill kept from being given back lapses in 2 s
  concurrency: { algorithm: 'concurrency', limit: 3, window: 2000 },
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

/**
 * Checks every route's admissions against its algorithm, outside `exempt`: the store decided (200, 429) and an
 * outage refused (503), nothing else was answered. Returns what each route admitted, of what it was asked.
 */
function check(histories: readonly History[], exempt: Exempt = []): string {
  const report: string[] = [];
  for (const [route, policy] of Object.entries(POLICIES)) {
    const resolved = validatePolicy({ ...policy, name: route });
    const records = histories.flatMap((h) => h.records[route] ?? []);
    const admitted: Admission[] =
      policy.algorithm === 'concurrency'
        ? histories.flatMap((h) => h.runs.map(([from, to]) => ({ from, to, cost: 1 })))
        : records.filter(([, , status]) => status === 200).map(([from, to]) => ({ from, to, cost: 1 }));
    const statuses = new Set(records.map(([, , status]) => status));
    expect({ route, statuses: [...statuses].sort() }).toEqual({ route, statuses: [200, 429, 503] });
    expect({ route, violations: violations(resolved, admitted, exempt) }).toEqual({ route, violations: [] });
    report.push(`${route} ${admitted.length}/${records.length}`);
  }
  return report.join(', ');
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

      const report = check(histories);
      process.stdout.write(`history ${lease === 0 ? 'without leases' : `lease ${lease}`}: ${report}\n`);
    },
    60_000,
  );
});

describe('the history of a fleet through a Sentinel failover', () => {
  let sentinel: TestSentinel;
  beforeEach(async () => {
    sentinel = await startSentinel();
  });
  afterEach(() => sentinel.stop());

  it.each([
    ['without leases', 0],
    ['with leases of 5', 5],
  ])(
    '%s: no window admits more than the algorithm allows, but those across the failover (writes not yet replicated may be lost)',
    async (_, lease) => {
      const fleet = new Fleet(
        { options: { sentinels: [{ host: '127.0.0.1', port: sentinel.port }], name: 'rl' } },
        lease,
      );
      await fleet.ready();
      fleet.go();
      await sleep(1500);
      const killedAt = Date.now();
      sentinel.master.process.kill('SIGKILL');
      await new Promise((resolve) => sentinel.master.process.once('exit', resolve));
      const promoted = sentinel.replica.client();
      await waitFor(
        async () => (await promoted.info('replication')).includes('role:master'),
        'the sentinel to promote the replica',
        30_000,
      );
      await sleep(2500);
      const histories = await fleet.stop();
      // from a little before the kill (what was not replicated yet) to the first decision of the promoted replica
      const decidedAgain = Math.min(
        ...histories.flatMap((h) =>
          Object.values(h.records).flatMap((records) =>
            records.filter(([from, , status]) => from > killedAt && status !== 503).map(([, to]) => to),
          ),
        ),
      );
      expect(decidedAgain).toBeLessThan(Infinity);
      const report = check(histories, [[killedAt - 1000, decidedAgain]]);
      process.stdout.write(`failover history ${lease === 0 ? 'without leases' : `lease ${lease}`}: ${report}\n`);
    },
    60_000,
  );
});
