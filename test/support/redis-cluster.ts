import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { Cluster, Redis } from 'ioredis';

import { freePort, RedisPortTaken, startRedis, type TestRedis } from './redis-server.js';
import { waitFor } from './wait.js';

/** A Redis Cluster of the test's own: 3 masters and 3 replicas on loopback, made with redis-cli --cluster create. */
export interface TestCluster {
  readonly nodes: TestRedis[];
  readonly ports: number[];
  client(): Cluster;
  /** The node that is master of the slot of `key`. */
  masterOf(key: string): Promise<TestRedis>;
  stop(): Promise<void>;
}

/** CLUSTER INFO of a node (`section` 'cluster'), or its INFO replication; '' while it does not answer. */
async function clusterInfo(port: number, section: 'cluster' | 'replication' = 'cluster'): Promise<string> {
  const admin = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  try {
    await admin.connect();
    return section === 'cluster' ? ((await admin.cluster('INFO')) as string) : await admin.info('replication');
  } catch {
    return '';
  } finally {
    admin.disconnect();
  }
}

/**
 * Starts a cluster; when a node's port (or its bus port, port + 10000) was taken before it could bind it, the
 * nodes that started are stopped and the cluster is started again on other ports.
 */
export async function startCluster(): Promise<TestCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce();
    } catch (error) {
      if (!(error instanceof RedisPortTaken) || attempt >= 3) throw error;
    }
  }
}

async function startClusterOnce(): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-cluster-'));
  const ports: number[] = [];
  while (ports.length < 6) {
    const port = await freeNodePort();
    if (!ports.includes(port) && !ports.includes(port + BUS_PORT_OFFSET)) ports.push(port);
  }
  const nodes = await startNodes(ports, dir);
  const created = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
    { encoding: 'utf8' },
  );
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`);
  await waitFor(
    async () =>
      (await Promise.all(ports.map((port) => clusterInfo(port)))).every((info) => info.includes('cluster_state:ok')),
    'the cluster to be ok on every node',
    20_000,
  );
  // A replica that has not synced with its master yet cannot take over from it (a failover test would wait
  // for ever): every replica's link is up before the cluster is used.
  await waitFor(
    async () =>
      (await Promise.all(ports.map((port) => clusterInfo(port, 'replication')))).every(
        (info) => info.includes('role:master') || info.includes('master_link_status:up'),
      ),
    'every replica to sync with its master',
    20_000,
  );
  const clients: Cluster[] = [];
  return {
    nodes,
    ports,
    client() {
      const client = new Cluster(ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })));
      clients.push(client);
      return client;
    },
    async masterOf(key) {
      const probe = new Redis({ host: '127.0.0.1', port: ports[0] });
      try {
        const slot = (await probe.cluster('KEYSLOT', key)) as number;
        const shards = (await probe.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
        const owner = shards.find(([from, to]) => slot >= from && slot <= to);
        const node = nodes.find((n) => n.port === owner?.[2][1]);
        if (node === undefined) throw new Error(`no master found for slot ${slot}`);
        return node;
      } finally {
        probe.disconnect();
      }
    },
    async stop() {
      clients.forEach((client) => client.disconnect());
      await Promise.all(nodes.map((node) => node.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts a node on each port; if one fails, stops the others (and removes `dir`) before it rethrows. */
/** A node's cluster bus listens on its port + 10000, which must be a port too: a node's port is 55535 at most. */
const BUS_PORT_OFFSET = 10_000;
const HIGHEST_NODE_PORT = 65_535 - BUS_PORT_OFFSET;

/**
 * A free port for a cluster node whose bus port is free too. Linux hands out ports up to 60999, and a node on
 * one above 55535 exits at start ("Redis port number too high"): retried as a taken port, that failed about
 * one cluster start in five, and sometimes all three attempts.
 */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port <= HIGHEST_NODE_PORT && (await isFree(port + BUS_PORT_OFFSET))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function startNodes(ports: number[], dir: string): Promise<TestRedis[]> {
  const started = await Promise.allSettled(
    ports.map((port) =>
      startRedis({
        port,
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '1000',
          '--dir',
          dir,
        ],
      }),
    ),
  );
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed === undefined) return started.map((s) => (s as PromiseFulfilledResult<TestRedis>).value);
  await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
  rmSync(dir, { recursive: true, force: true });
  throw failed.reason;
}
