import type { Cluster, Redis } from 'ioredis';

// What a Redis has run, read from INFO commandstats: tests count store calls, never time them.

/** The calls of `command` in the text of INFO commandstats. */
const callsIn = (stats: string, command: string): number =>
  Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);

/** How many times this Redis has run `command` (lower case, as `INFO commandstats` names it). */
export async function callsOf(admin: Redis | Cluster, command: string): Promise<number> {
  return callsIn(await admin.info('commandstats'), command);
}

/**
 * The items the store's Lua has decided: each reads its key once before it writes (if it does), by GET or, for
 * several items, one MGET: the reads of keys (INFO stats' keyspace hits and misses; writes look keys up without
 * counting).
 */
export async function itemsDecided(admin: Redis | Cluster): Promise<number> {
  const stats = await admin.info('stats');
  const stat = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  return stat('keyspace_hits') + stat('keyspace_misses');
}

/** The store's decisions (and other store calls) this Redis has run: the function (Redis 7) or the script. */
export async function decisionCalls(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  return callsIn(stats, 'fcall') + callsIn(stats, 'evalsha') + callsIn(stats, 'eval');
}

/**
 * Every command this Redis has run but INFO (the test's own reads) and PING (the feed of changes' heartbeat,
 * every 250 ms on its own connection): any call of the store, of whatever kind, shows here.
 */
export async function commandsRun(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let calls = 0;
  for (const [, command, count] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (command !== 'info' && command !== 'ping') calls += Number(count);
  }
  return calls;
}

/**
 * The calls of write commands this Redis has run (those COMMAND INFO flags `write`: SET, INCRBY, DECRBY, DEL,
 * PEXPIRE, ZADD, ...): what replicas and the AOF are sent. FCALL and EVALSHA are not among them, the commands
 * their scripts run are.
 */
export async function writesRun(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  const counted = [...stats.matchAll(/^cmdstat_([^:|]+):calls=(\d+)/gm)];
  const infos = (await admin.call('COMMAND', 'INFO', ...counted.map(([, name]) => name as string))) as unknown[];
  let writes = 0;
  counted.forEach(([, , calls], i) => {
    const flags = (infos[i] as [string, number, string[]] | null)?.[2] ?? [];
    if (flags.includes('write')) writes += Number(calls);
  });
  return writes;
}
