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
 * The items the store's Lua has decided: each reads its key once, by GET or, a fixed window's consume counting
 * first (lean-kernels.lua.ts: a fixed window's or a GCRA's), by INCRBY.
 */
export async function itemsDecided(admin: Redis | Cluster): Promise<number> {
  const stats = await admin.info('commandstats');
  return callsIn(stats, 'get') + callsIn(stats, 'incrby');
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
