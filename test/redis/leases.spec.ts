import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';

import { itemsDecided } from '../support/redis-commands.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

// Four app processes (the built package) on one real Redis, every request on one hot key. Round 1 offers 80% of
// the limit: all of it passes, with about one store decision per lease. Round 2 offers as much again: the fleet
// admits no more than the limit in all, and at most instances × lease less. The store's decisions are counted
// as the GETs the script runs (one per key decided: batching puts several decisions in one call).

const LIMIT = 400;
const LEASE = 20;
const INSTANCES = 4;
const PER_ROUND = (0.8 * LIMIT) / INSTANCES;

interface Statuses {
  readonly 200: number;
  readonly 429: number;
  readonly other: number;
}

const sum = (all: readonly Statuses[]): Statuses =>
  all.reduce((a, s) => ({ 200: a[200] + s[200], 429: a[429] + s[429], other: a.other + s.other }));

/** Four app instances, each sending PER_ROUND requests at every round(). */
class Fleet {
  private readonly children: ChildProcessWithoutNullStreams[];
  private readonly lines: string[][];
  private readonly waiting: ((line: string) => void)[][];

  constructor(url: string, policy: object) {
    const script = fileURLToPath(new URL('../support/lease-child.mjs', import.meta.url));
    this.children = Array.from({ length: INSTANCES }, () =>
      spawn(process.execPath, [script, url, JSON.stringify(policy), String(PER_ROUND)]),
    );
    this.lines = this.children.map(() => []);
    this.waiting = this.children.map(() => []);
    this.children.forEach((child, i) => {
      child.stderr.pipe(process.stderr);
      child.stdout.on('data', (chunk: Buffer) => {
        for (const line of chunk.toString().trim().split('\n')) {
          const resolve = this.waiting[i]?.shift();
          if (resolve === undefined) this.lines[i]?.push(line);
          else resolve(line);
        }
      });
    });
  }

  private next(i: number): Promise<string> {
    const line = this.lines[i]?.shift();
    if (line !== undefined) return Promise.resolve(line);
    return new Promise((resolve) => this.waiting[i]?.push(resolve));
  }

  async ready(): Promise<void> {
    const lines = await Promise.all(this.children.map((_, i) => this.next(i)));
    expect(lines).toEqual(lines.map(() => 'ready'));
  }

  /** Every instance sends its round at once; what they were answered, in all. */
  async round(): Promise<Statuses> {
    this.children.forEach((child) => child.stdin.write('go\n'));
    const lines = await Promise.all(this.children.map((_, i) => this.next(i)));
    return sum(lines.map((line) => JSON.parse(line) as Statuses));
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((child) => new Promise((resolve) => child.once('exit', resolve).stdin.end())));
  }
}

describe('leases: four processes on one Redis, one hot key', () => {
  let redis: TestRedis;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.port, '127.0.0.1');
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  /** The two rounds of a policy: what each admitted and the store's decisions in the first. */
  async function run(policy: object): Promise<{ first: Statuses; second: Statuses; decisions: number }> {
    await admin.flushall();
    const fleet = new Fleet(redis.url, policy);
    try {
      await fleet.ready();
      const before = await itemsDecided(admin);
      const first = await fleet.round();
      const decisions = (await itemsDecided(admin)) - before;
      const second = await fleet.round();
      return { first, second, decisions };
    } finally {
      await fleet.stop();
    }
  }

  // A day's window: the buckets refill less than one unit while the test runs.
  const policies = {
    'fixed-window': { algorithm: 'fixed-window', window: '1d' },
    'sliding-window-counter': { algorithm: 'sliding-window-counter', window: '1d' },
    'token-bucket': { algorithm: 'token-bucket', window: '1d' },
    gcra: { algorithm: 'gcra', window: '1d' },
    quota: { algorithm: 'quota', period: 'month' },
  } as const;

  it.each(Object.entries(policies))(
    '%s: admits all below the limit in about one store decision a lease, and never more than the limit',
    async (name, fields) => {
      const { first, second, decisions } = await run({ name: `hot-${name}`, limit: LIMIT, lease: LEASE, ...fields });
      expect(first).toEqual({ 200: INSTANCES * PER_ROUND, 429: 0, other: 0 });
      // takes grow 1, 2, 4, ... up to the lease in each instance, then one a lease
      const growth = INSTANCES * (Math.ceil(Math.log2(LEASE)) + 1);
      expect(decisions).toBeLessThanOrEqual(Math.ceil((INSTANCES * PER_ROUND) / LEASE) + growth);
      const admitted = first[200] + second[200];
      // the buckets may refill one unit over the day's window while the test runs
      expect(admitted).toBeLessThanOrEqual(name === 'token-bucket' || name === 'gcra' ? LIMIT + 1 : LIMIT);
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - INSTANCES * LEASE);
      expect(second.other).toBe(0);
      process.stdout.write(
        `${name}, lease ${LEASE}: ${decisions} store decisions for ${first[200]} requests below the limit ` +
          `(${(decisions / first[200]).toFixed(3)} a request); ${admitted} admitted of ${2 * INSTANCES * PER_ROUND} offered, limit ${LIMIT}\n`,
      );
    },
  );

  it('without a lease: one store decision a request (the baseline)', async () => {
    const { first, second, decisions } = await run({
      name: 'hot-plain',
      algorithm: 'fixed-window',
      window: '1d',
      limit: LIMIT,
    });
    expect(first[200]).toBe(INSTANCES * PER_ROUND);
    expect(decisions).toBe(INSTANCES * PER_ROUND);
    expect(first[200] + second[200]).toBe(LIMIT);
    process.stdout.write(`no lease: ${decisions} store decisions for ${first[200]} requests below the limit\n`);
  });
});
