import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { MemoryRateLimitStore, type RateLimitPolicy, type RateLimitStore, validatePolicy } from '../../lib/index.js';
import { ALGORITHMS } from '../../lib/policy/policy.types.js';
import { FakeClock } from '../../lib/testing/index.js';
import { nth } from '../support/harness.js';
import { policyOf } from '../support/policies.js';
import { migratedSchema } from '../support/postgres.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

/** How far the second instance's clock is behind the first's. */
const SKEW_MS = 1500;
const WINDOW_MS = 10_000;
const LIMIT = 20;

/** An app instance in a process of its own, on one Redis, whose clock the test shifts. */
class Instance {
  private readonly child: ChildProcessByStdio<Writable, Readable, null>;
  private readonly lines: AsyncIterator<string>;
  private readonly rl: Interface;

  constructor(redisUrl: string) {
    const script = fileURLToPath(new URL('../support/skewed-instance.mjs', import.meta.url));
    this.child = spawn(process.execPath, [script, redisUrl], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.rl = createInterface({ input: this.child.stdout });
    this.lines = this.rl[Symbol.asyncIterator]();
  }

  async next(): Promise<string> {
    const { value, done } = await this.lines.next();
    if (done === true) throw new Error('the instance exited');
    return value as string;
  }

  async send(line: string): Promise<string> {
    this.child.stdin.write(`${line}\n`);
    return this.next();
  }

  async consume(count: number, policy: RateLimitPolicy): Promise<number> {
    return Number(await this.send(`consume ${count} ${JSON.stringify(policy)}`));
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    await exited;
    this.rl.close();
  }
}

/** The next edge after now: of a clock-aligned window, or of a calendar month in UTC. */
function nextEdge(policy: RateLimitPolicy, nowMs: number): number {
  if (policy.algorithm === 'quota') {
    const now = new Date(nowMs);
    return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  }
  return (Math.floor(nowMs / WINDOW_MS) + 1) * WINDOW_MS;
}

/**
 * Regression: two app instances on one Redis whose clocks differ (the default `clock: 'local'`). Right after
 * a window edge, the instance behind read the newer window's state as "another window, so empty" and wrote
 * its older window over it; the instance ahead then did the same: 20 + 1 + 20 requests were all admitted
 * at a limit of 20 per window (40 for the sliding window counter), and a month's quota could be wiped.
 */
describe('two instances on one Redis, one clock 1.5 s behind the other, across a window edge', () => {
  let redis: TestRedis;
  let ahead: Instance;
  let behind: Instance;

  beforeAll(async () => {
    redis = await startRedis();
    ahead = new Instance(redis.url);
    behind = new Instance(redis.url);
    expect([await ahead.next(), await behind.next()]).toEqual(['ready', 'ready']);
  });
  afterAll(async () => {
    await Promise.all([ahead?.stop(), behind?.stop()]);
    await redis?.stop();
  });

  // Every algorithm: the buckets refill while the test runs (a request per WINDOW_MS / LIMIT = 500 ms at most);
  // the quota's edge is a month's.
  const policies: [string, RateLimitPolicy, number][] = ALGORITHMS.map((algorithm) => [
    algorithm === 'quota' ? 'quota (month edge)' : algorithm,
    policyOf(algorithm, { name: `skew-${algorithm}`, limit: LIMIT, window: WINDOW_MS, period: 'month' }),
    algorithm === 'token-bucket' || algorithm === 'gcra' ? 2 : 0,
  ]);

  it.each(policies)('%s: 20 ahead, 1 behind, 20 ahead admit no more than the limit', async (_name, policy, refill) => {
    // Shift both clocks so that the instance ahead is 50 ms past an edge and the one behind 1,450 ms before it.
    const realNow = Date.now();
    const shiftMs = nextEdge(policy, realNow + 1000) + 50 - realNow;
    expect(await ahead.send(`offset ${shiftMs}`)).toBe('ok');
    expect(await behind.send(`offset ${shiftMs - SKEW_MS}`)).toBe('ok');

    const first = await ahead.consume(LIMIT, policy);
    const late = await behind.consume(1, policy);
    const second = await ahead.consume(LIMIT, policy);

    expect(first).toBe(LIMIT);
    expect(first + late + second).toBeLessThanOrEqual(LIMIT + refill);
    expect(late).toBe(0);
  });
});

/**
 * The same rule in the other stores, on fake clocks: PostgreSQL shared by two instances whose clocks differ,
 * and the memory store of one process whose clock steps back across an edge (an NTP correction).
 */
describe('a key written by a clock ahead, decided by a clock behind', () => {
  const db = migratedSchema('pg');

  // Every algorithm, on fake clocks (nothing refills); the quota's edge is a month's in Paris.
  const skewed: [string, RateLimitPolicy][] = ALGORITHMS.map((algorithm) => [
    algorithm === 'quota' ? 'quota (month edge, Europe/Paris)' : algorithm,
    policyOf(algorithm, {
      name: `skew-${algorithm}`,
      limit: LIMIT,
      window: WINDOW_MS,
      period: 'month',
      timeZone: 'Europe/Paris',
    }),
  ]);

  async function scenario(
    aheadStore: RateLimitStore,
    behindStore: RateLimitStore,
    policy: RateLimitPolicy,
  ): Promise<number[]> {
    const resolved = validatePolicy(policy);
    const consume = async (store: RateLimitStore, count: number): Promise<number> => {
      let admitted = 0;
      for (let i = 0; i < count; i++)
        if (nth(await store.consume([{ policy: resolved, key: 'one', cost: 1 }]), 0).allowed) admitted++;
      return admitted;
    };
    return [await consume(aheadStore, LIMIT), await consume(behindStore, 1), await consume(aheadStore, LIMIT)];
  }

  /** 50 ms past an edge: of the window, or of the month in Paris (2026-12-01T00:00 local = 23:00 UTC). */
  const edgeOf = (policy: RateLimitPolicy): number =>
    policy.algorithm === 'quota' ? Date.UTC(2026, 10, 30, 23) + 50 : 177_000_000 * WINDOW_MS + 50;

  it.each(skewed)(
    'PostgreSQL, %s: the instance behind counts against the newer window or period',
    async (_name, policy) => {
      const aheadClock = new FakeClock(edgeOf(policy));
      const behindClock = new FakeClock(edgeOf(policy) - SKEW_MS);
      const keyPrefix = `pg-${policy.name}:`;
      const aheadStore = db.store({ keyPrefix, clock: aheadClock });
      const behindStore = db.store({ keyPrefix, clock: behindClock });
      expect(await scenario(aheadStore, behindStore, policy)).toEqual([LIMIT, 0, 0]);
    },
  );

  it.each(skewed)(
    'memory, %s: a clock that steps back across the edge keeps counting the newer one',
    async (_name, policy) => {
      const clock = new FakeClock(edgeOf(policy));
      const store = new MemoryRateLimitStore({ clock });
      const resolved = validatePolicy(policy);
      const one = async (): Promise<boolean> =>
        nth(await store.consume([{ policy: resolved, key: 'one', cost: 1 }]), 0).allowed;
      let admitted = 0;
      for (let i = 0; i < LIMIT; i++) if (await one()) admitted++;
      clock.advance(-SKEW_MS);
      expect(await one()).toBe(false);
      clock.advance(SKEW_MS);
      for (let i = 0; i < LIMIT; i++) if (await one()) admitted++;
      expect(admitted).toBe(LIMIT);
    },
  );
});
