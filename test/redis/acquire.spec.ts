import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { Test } from '@nestjs/testing';

import {
  type RateLimitPolicy,
  RateLimitModule,
  RateLimitService,
  RateLimitStoreTimeoutError,
} from '../../lib/index.js';
import { mostInAnyWindow } from '../support/admissions.js';
import { redisForSpec, startRedis } from '../support/redis-server.js';

interface ChildReport {
  resolved: number;
  allowed: number;
  rejected: string[];
  calls: number;
  denials: number;
  lastCallMs: number;
  admittedAtMs: number[];
}

/** Runs 4 app processes (test/support/acquire-child.mjs), released together, and returns their reports. */
async function acquireFromProcesses(
  port: number,
  keyPrefix: string,
  {
    perProcess,
    limit,
    windowMs,
    maxWaitMs,
  }: { perProcess: number; limit: number; windowMs: number; maxWaitMs: number },
): Promise<ChildReport[]> {
  const script = fileURLToPath(new URL('../support/acquire-child.mjs', import.meta.url));
  const args = [
    script,
    String(port),
    keyPrefix,
    String(perProcess),
    String(limit),
    String(windowMs),
    String(maxWaitMs),
  ];
  const children = Array.from({ length: 4 }, () =>
    spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const runs = children.map((child) => {
    let out = '';
    let ready: () => void = () => undefined;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const done = new Promise<ChildReport>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.startsWith('ready\n')) ready();
      });
      child.once('exit', (code) =>
        code === 0
          ? resolve(JSON.parse(out.slice('ready\n'.length)) as ChildReport)
          : reject(new Error(`child exited with ${code}`)),
      );
    });
    return { isReady, done };
  });
  await Promise.all(runs.map((r) => r.isReady));
  children.forEach((child) => child.stdin.end('go\n'));
  return Promise.all(runs.map((r) => r.done));
}

describe('acquire() on Redis', () => {
  const redis = redisForSpec();

  it('from 4 processes on one key: every unit is had, and no window of the policy holds more than its limit', async () => {
    const [limit, windowMs] = [5, 1000];
    const reports = await acquireFromProcesses(redis.port, 'acquire-4:', {
      perProcess: 5,
      limit,
      windowMs,
      maxWaitMs: 20_000,
    });
    for (const report of reports) {
      expect(report).toMatchObject({ resolved: 5, allowed: 5, rejected: [] });
      // every resolved acquire is an admission the store logged: none resolved on a denial
      expect(report.admittedAtMs).toHaveLength(5);
    }
    const admittedAtMs = reports.flatMap((r) => r.admittedAtMs);
    expect(admittedAtMs).toHaveLength(20);
    expect(mostInAnyWindow(admittedAtMs, windowMs)).toBe(limit);
    // No busy loop, and only a process's head asks: each denial of a process waits until an entry of the
    // log leaves the window (its retryAfterMs), and the next call of that process comes after it, so the
    // denials of one process are at most the entries that left the window before its last call.
    for (const report of reports) {
      const freed = new Set(admittedAtMs.filter((atMs) => atMs + windowMs <= report.lastCallMs)).size;
      expect(report.denials).toBeLessThanOrEqual(freed);
      expect(report.calls).toBe(5 + report.denials);
    }
  }, 60_000);

  it('rejects with the store error, as consume does, when Redis stops answering while it waits', async () => {
    const hung = await startRedis();
    const errors: string[] = [];
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: { url: hung.url }, onError: (_e, policy) => errors.push(policy) })],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    const service = moduleRef.get(RateLimitService);
    const policy: RateLimitPolicy = { name: 'provider', algorithm: 'gcra', limit: 1, window: 300 };
    try {
      await service.consume(policy, 'k');
      const waiting = service.acquire(policy, 'k', { maxWaitMs: 10_000 }).then(
        () => 'admitted',
        (error: unknown) => error,
      );
      // Replies of one connection come in order: once the peek is answered, the acquire was denied and sleeps.
      expect((await service.peek(policy, 'k')).allowed).toBe(false);
      hung.process.kill('SIGSTOP');
      const failed = await waiting;
      const fromConsume = await service.consume(policy, 'k').then(
        () => 'admitted',
        (error: unknown) => error,
      );
      expect(failed).toBeInstanceOf(RateLimitStoreTimeoutError);
      expect(fromConsume).toBeInstanceOf(RateLimitStoreTimeoutError);
      expect((failed as Error).message).toBe((fromConsume as Error).message);
      expect(errors).toEqual(['provider', 'provider']);
      // an acquire that finds the store down rejects the same way, at once
      await expect(service.acquire(policy, 'k', { maxWaitMs: 10_000 })).rejects.toBeInstanceOf(
        RateLimitStoreTimeoutError,
      );
    } finally {
      hung.process.kill('SIGCONT');
      await moduleRef.close();
      await hung.stop();
    }
  });
});
