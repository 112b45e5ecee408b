import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { freePort, startRedis, type TestRedis } from './redis-server.js';
import { waitFor } from './wait.js';

/** A master, its replica and one sentinel that watches them (master name `rl`), all of the test's own. */
export interface TestSentinel {
  readonly master: TestRedis;
  readonly replica: TestRedis;
  /** The sentinel's port, for `sentinels: [{ host: '127.0.0.1', port }]`. */
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * Starts a master, a replica of it and a sentinel that promotes the replica 1 s after the master stops
 * answering; resolves once the replica is in sync.
 */
export async function startSentinel(): Promise<TestSentinel> {
  const master = await startRedis();
  const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
  const dir = mkdtempSync(join(tmpdir(), 'rl-sentinel-'));
  const port = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor rl 127.0.0.1 ${master.port} 1`,
      'sentinel down-after-milliseconds rl 1000',
      'sentinel failover-timeout rl 5000',
    ].join('\n'),
  );
  const sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  const probe = replica.client({ lazyConnect: true });
  await waitFor(async () => {
    try {
      if (probe.status !== 'ready') await probe.connect();
      return (await probe.info('replication')).includes('master_link_status:up');
    } catch {
      return false;
    }
  }, 'the replica to sync');
  return {
    master,
    replica,
    port,
    async stop() {
      sentinel.kill('SIGKILL');
      await replica.stop();
      await master.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
