import calculateSlot from 'cluster-key-slot';

import type { RedisDriver, RedisNode } from './clients/redis-driver.js';

/** Keys per SCAN step and per UNLINK: small steps, so Redis is never blocked for long. */
const BATCH = 500;

/** A SCAN MATCH pattern for the keys that start with `prefix` (its glob characters escaped). */
const under = (prefix: string): string => `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;

/**
 * Removes every key that starts with `prefix` but those in `keep` — on each master of a Cluster — with SCAN and UNLINK in
 * batches (never KEYS or FLUSHDB: other keys of the server stay, and Redis answers other clients meanwhile).
 * Resolves with the number of keys removed.
 */
export async function unlinkUnder(
  client: RedisDriver,
  prefix: string,
  keep: ReadonlySet<string> = new Set(),
): Promise<number> {
  const nodes = await client.masters();
  let removed = 0;
  for (const node of nodes) removed += await unlinkOn(node, under(prefix), client.isCluster, keep);
  return removed;
}

async function unlinkOn(
  node: RedisNode,
  pattern: string,
  cluster: boolean,
  keep: ReadonlySet<string>,
): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, found] = (await node.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(BATCH)])) as [
      string,
      string[],
    ];
    cursor = next;
    const keys = found.filter((key) => !keep.has(key));
    // On a Cluster, one UNLINK may name the keys of one slot only.
    const groups = cluster ? bySlot(keys) : [keys];
    const counts = await Promise.all(
      groups.filter((group) => group.length > 0).map((group) => node.command(['UNLINK', ...group])),
    );
    removed += counts.reduce<number>((sum, count) => sum + Number(count), 0);
  } while (cursor !== '0');
  return removed;
}

function bySlot(keys: readonly string[]): string[][] {
  const groups = new Map<number, string[]>();
  for (const key of keys) {
    const slot = calculateSlot(key);
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [key]);
    else group.push(key);
  }
  return [...groups.values()];
}
