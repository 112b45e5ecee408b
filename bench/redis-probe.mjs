// What a decision costs Redis, read from Redis itself: `npm run bench:redis-probe` (or `node --import
// ./bench/peers.mjs bench/redis-probe.mjs` after `npm run build`). Starts its own redis-server; each variant
// sends REQUESTS requests, IN_FLIGHT at a time, over 10,000 users (or HOT_USERS), through its own client (this
// module's store batching as in an app; the peers and the floor scripts with ioredis auto-pipelining, their
// best), once to create the keys and once measured: CONFIG RESETSTAT before and INFO commandstats after the
// measured phase give Redis's own time in each command (no network I/O), per decision. The variants run
// interleaved, ROUNDS rounds; medians and spreads. Then MEMORY USAGE of each variant's keys beside an integer
// counter with a TTL under a name of the same length. Prints JSON; with --markdown, a results file (BENCH_OUT,
// default bench/RESULTS-redis-probe.md) that says the machine's load while it ran.
//
// Environment: BENCH_BASELINE_DIST (an earlier build's dist/, relative to bench/: each of this module's variants
// again on it, named `…@base`, in the same run), BENCH_ROUNDS (default 9), BENCH_REQUESTS (default 20,000),
// BENCH_VARIANTS (comma-separated); BENCH_CALLGRIND=1 runs redis-server under valgrind's callgrind and adds the
// instructions it ran in the measured phase per decision (all of them: reading, parsing, commands, replies),
// which a loaded machine leaves as they are (slow: use BENCH_REQUESTS=2000 BENCH_ROUNDS=1).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

import * as current from '../dist/index.js';
import { freePort, ping } from './net.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const IN_FLIGHT = 50;
const USERS = 10_000;
// No key reaches its limit and none expires while it is measured.
const LIMIT = 100_000;
const WINDOW = '1h';
const WINDOW_S = 3600;

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const callgrind = process.env.BENCH_CALLGRIND === '1';
const dumps = callgrind ? mkdtempSync(join(os.tmpdir(), 'redis-probe-callgrind-')) : '';
const port = await freePort();
const redisArgs = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
const server = callgrind
  ? spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${dumps}/cg.out`, 'redis-server', ...redisArgs], {
      stdio: 'ignore',
    })
  : spawn('redis-server', redisArgs, { stdio: 'ignore' });
process.once('exit', () => server.kill('SIGKILL'));
for (let i = 0; !(await ping(port)); i++) {
  if (i > 200) throw new Error(`redis-server did not start on ${port}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
const admin = new Redis({ port });
const pipelined = new Redis({ port, enableAutoPipelining: true });

const baseline = process.env.BENCH_BASELINE_DIST;
const builds = { '': current };
if (baseline !== undefined) builds['@base'] = await import(new URL(`${baseline}/index.js`, import.meta.url).href);
/** This module's variants on one build: one policy of each algorithm, three policies of one request. */
function oursOn({ RedisRateLimitStore, validatePolicy }, suffix) {
  const policy = (name, algorithm) => validatePolicy({ name, algorithm, limit: LIMIT, window: WINDOW });
  const store = new RedisRateLimitStore({ client: new Redis({ port }) });
  stores.push(store);
  const ours = (policies) => (user) =>
    store.consume(policies.map((p) => ({ policy: p, key: `user:${user}`, cost: 1 })));
  const variants = {};
  for (const algorithm of ['fixed-window', 'sliding-window-counter', 'token-bucket', 'gcra']) {
    variants[`${algorithm}${suffix}`] = [ours([policy('per-user', algorithm)]), 1];
  }
  variants[`3 policies (fixed window ×3)${suffix}`] = [
    ours([policy('per-user', 'fixed-window'), policy('per-route', 'fixed-window'), policy('login', 'fixed-window')]),
    3,
  ];
  variants[`3 policies (swc + token bucket + gcra)${suffix}`] = [
    ours([policy('per-user', 'sliding-window-counter'), policy('burst', 'token-bucket'), policy('smooth', 'gcra')]),
    3,
  ];
  return variants;
}
const stores = [];

/** A hand-written script, EVALSHA per decision: the least a decision's commands can cost inside a script. */
const FLOORS = {
  'GET + SET PX': `local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], tonumber(v or '0') + 1, 'PX', ARGV[1])
return 1`,
  'INCRBY + PEXPIRE': `local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n`,
};
const floor = (script) => {
  const sha = admin.script('LOAD', script);
  return async (user) =>
    pipelined.evalsha(await sha, 1, `fl:{per-user:user:${user}}`, '1', String(WINDOW_S * 1000)).then(() => null);
};

const flexible = new RateLimiterRedis({
  storeClient: pipelined,
  points: LIMIT,
  duration: WINDOW_S,
  keyPrefix: 'rlflx',
});

/**
 * The variants: how one request is decided, how many decisions it is, and over how many users (HOT_USERS: each
 * user's requests come within a GCRA's emission interval, 36 ms here, so its TAT is ahead of now).
 */
const HOT_USERS = 100;
const ALL_OURS = Object.assign({}, ...Object.entries(builds).map(([suffix, build]) => oursOn(build, suffix)));
const ALL = {
  ...ALL_OURS,
  'rate-limiter-flexible': [(user) => flexible.consume(`user:${user}`), 1],
  [`gcra (${HOT_USERS} users)`]: [ALL_OURS.gcra[0], 1, HOT_USERS],
  [`rate-limiter-flexible (${HOT_USERS} users)`]: [(user) => flexible.consume(`user:${user}`), 1, HOT_USERS],
  'floor: GET + SET PX': [floor(FLOORS['GET + SET PX']), 1],
  'floor: INCRBY + PEXPIRE': [floor(FLOORS['INCRBY + PEXPIRE']), 1],
};
const only = process.env.BENCH_VARIANTS?.split(',');
const VARIANTS = Object.entries(ALL).filter(([name]) => only === undefined || only.includes(name));

/** REQUESTS requests of `decide`, IN_FLIGHT at a time, over USERS users. */
async function drive(decide, users) {
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) await decide(next++ % users);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** commandstats as { command: { calls, usec } }. */
async function commandStats() {
  const stats = {};
  for (const [, name, calls, usec] of (await admin.info('commandstats')).matchAll(
    /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm,
  )) {
    stats[name] = { calls: Number(calls), usec: Number(usec) };
  }
  return stats;
}

// Commands a client sends: the others in commandstats ran inside them.
const OUTER = new Set(['fcall', 'evalsha', 'eval', 'fcall_ro', 'evalsha_ro']);

/** Instructions redis-server ran while `run` ran (callgrind's counters zeroed, then dumped). */
async function instructions(run) {
  execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
  await run();
  execFileSync('callgrind_control', ['-d', String(server.pid)], { stdio: 'ignore' });
  const last = readdirSync(dumps)
    .filter((f) => f.startsWith('cg.out.'))
    .sort((a, b) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1)))
    .at(-1);
  return Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dumps, last), 'utf8'))?.[1]);
}

async function measure(decide, decisions, users) {
  await drive(decide, users); // the keys exist before the measured phase, as in a running app
  await admin.config('RESETSTAT');
  const ir = callgrind ? await instructions(() => drive(decide, users)) : (await drive(decide, users), undefined);
  const stats = await commandStats();
  for (const c of Object.keys(stats)) if (c.startsWith('config')) delete stats[c];
  const outer = Object.keys(stats).filter((c) => OUTER.has(c));
  const total = (outer.length > 0 ? outer : Object.keys(stats)).reduce((sum, c) => sum + stats[c].usec, 0);
  const perCommand = Object.fromEntries(
    Object.entries(stats).map(([c, { calls, usec }]) => [
      c,
      { callsPerRequest: calls / REQUESTS, usecPerDecision: usec / (REQUESTS * decisions) },
    ]),
  );
  const irPerDecision = ir === undefined ? undefined : Math.round(ir / (REQUESTS * decisions));
  return { usPerDecision: total / (REQUESTS * decisions), irPerDecision, perCommand };
}

/** MEMORY USAGE of `key`, and of an integer counter with a TTL under a name of the same length. */
async function memoryOf(key) {
  const twin = `i${'x'.repeat(key.length - 1)}`;
  await admin.set(twin, '7', 'PX', WINDOW_S * 1000);
  const [bytes, counter] = await Promise.all([key, twin].map((k) => admin.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')));
  await admin.del(twin);
  return { key, bytes: Number(bytes), integerCounter: Number(counter) };
}

const loadBefore = loadAverage();
const rounds = Object.fromEntries(VARIANTS.map(([name]) => [name, []]));
const memory = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, [decide, decisions, users = USERS]] of VARIANTS) {
    await admin.flushall();
    rounds[name].push(await measure(decide, decisions, users));
    if (round === 0) {
      // three of the variant's keys (Redis was flushed before it; identities are hashed in this module's keys)
      const keys = (await admin.keys('*')).sort().slice(0, 3);
      memory[name] = await Promise.all(keys.map(memoryOf));
    }
  }
}
const loadAfter = loadAverage();

const results = Object.fromEntries(
  VARIANTS.map(([name]) => {
    const us = rounds[name].map((r) => r.usPerDecision);
    const commands = {};
    for (const c of Object.keys(rounds[name][0].perCommand)) {
      commands[c] = {
        callsPerRequest: median(rounds[name].map((r) => r.perCommand[c]?.callsPerRequest ?? 0)),
        usecPerDecision: median(rounds[name].map((r) => r.perCommand[c]?.usecPerDecision ?? 0)),
      };
    }
    const ir = rounds[name].map((r) => r.irPerDecision).filter((x) => x !== undefined);
    return [
      name,
      {
        usPerDecision: median(us),
        spread: [Math.min(...us), Math.max(...us)],
        irPerDecision: ir.length > 0 ? median(ir) : undefined,
        commands,
        memory: memory[name],
      },
    ];
  }),
);
const flex = results['rate-limiter-flexible']?.usPerDecision;
const flexIr = results['rate-limiter-flexible']?.irPerDecision;
for (const r of Object.values(results)) {
  if (flex) r.ratioToFlexible = r.usPerDecision / flex;
  if (flexIr && r.irPerDecision) r.irRatioToFlexible = r.irPerDecision / flexIr;
}
const out = {
  rounds: ROUNDS,
  requests: REQUESTS,
  inFlight: IN_FLIGHT,
  users: USERS,
  loadBefore,
  loadAfter,
  cpus: os.cpus().length,
  results,
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);

if (process.argv.includes('--markdown')) {
  const f = (x, d = 2) => (x === undefined || x === null ? '—' : x.toFixed(d));
  const rows = Object.entries(results).map(([name, r]) => {
    const cmds = Object.entries(r.commands)
      .filter(([c]) => !OUTER.has(c))
      .map(([c, v]) => `${c} ${f(v.usecPerDecision)}`)
      .join(', ');
    const mem = r.memory?.[0];
    const ir =
      r.irPerDecision === undefined ? '—' : `${(r.irPerDecision / 1000).toFixed(1)}k (${f(r.irRatioToFlexible)})`;
    return `| ${name} | ${f(r.usPerDecision)} | ${f(r.spread[0])}–${f(r.spread[1])} | ${f(r.ratioToFlexible)} | ${ir} | ${cmds} | ${mem ? `${mem.bytes} (${mem.integerCounter})` : '—'} |`;
  });
  const file = process.env.BENCH_OUT ?? fileURLToPath(new URL('RESULTS-redis-probe.md', import.meta.url));
  writeFileSync(
    file,
    `# Redis command CPU per decision

Produced by \`npm run bench:redis-probe -- --markdown\` on ${new Date().toISOString()}, ${os.cpus().length} cores
(${os.cpus()[0]?.model}), load average ${loadBefore.join(' / ')} before and ${loadAfter.join(' / ')} after (1 / 5 / 15
minutes); redis-server of its own. ${REQUESTS} requests per measurement, ${IN_FLIGHT} in flight, over ${USERS} users,
${ROUNDS} interleaved rounds (the \`(${HOT_USERS} users)\` variants: over ${HOT_USERS}, each user's requests within a
GCRA's emission interval); medians and spreads (min–max over the rounds). Redis's own time in the commands
(\`INFO commandstats\`, no network I/O) per decision: the outer command (FCALL, EVALSHA) with what ran inside it.
This module batches the requests of a turn of the event loop into one call; the peers and the floor scripts use
ioredis auto-pipelining (one script call per decision). Memory: \`MEMORY USAGE\` of a key after the run, and in
brackets an integer counter with a TTL under a name of the same length.

| variant | µs per decision | spread | × rate-limiter-flexible | instructions per decision (× flexible) | inside (µs per decision) | bytes per key |
|---|---:|---|---:|---:|---|---:|
${rows.join('\n')}
`,
  );
}
admin.disconnect();
pipelined.disconnect();
for (const store of stores) store.client.disconnect();
server.kill('SIGTERM');
