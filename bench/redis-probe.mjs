// What a decision costs Redis, read from Redis itself: `npm run bench:redis-probe` (or `node --import
// ./bench/peers.mjs bench/redis-probe.mjs` after `npm run build`). Starts its own redis-server; each variant
// sends REQUESTS requests, IN_FLIGHT at a time, over 10,000 users (or HOT_USERS), through its own client (this
// module's store batching as in an app; the peers and the floor scripts with ioredis auto-pipelining, their
// best), once to create the keys and once measured, in two shapes: over the same users again (existing keys)
// and over users never seen (new keys: each measured decision creates its key). CONFIG RESETSTAT before and INFO
// commandstats after the measured phase give Redis's own time in each command (no network I/O), per decision.
// The variants and shapes run interleaved, ROUNDS rounds; medians and spreads. Then MEMORY USAGE of each variant's keys beside an integer
// counter with a TTL under a name of the same length. Prints JSON; with --markdown, a results file (BENCH_OUT,
// default bench/RESULTS-redis-probe.md, written by bench/redis-probe-report.mjs) that says the machine's load
// while it ran.
//
// Environment: BENCH_BASELINE_DIST (an earlier build's dist/, relative to bench/: each of this module's variants
// again on it, named `…@base`, in the same run), BENCH_ROUNDS (default 9), BENCH_REQUESTS (default 20,000),
// BENCH_VARIANTS (comma-separated); BENCH_CALLGRIND=1 runs redis-server under valgrind's callgrind and adds the
// instructions it ran in the measured phase per decision (all of them: reading, parsing, commands, replies),
// which a loaded machine leaves as they are (slow: use BENCH_REQUESTS=2000 BENCH_ROUNDS=1).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

import * as current from '../dist/index.js';
import { freePort, ping } from './net.mjs';
import { loadAverage, median, writeResults } from './stats.mjs';
import { markdown, SHAPES } from './redis-probe-report.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const IN_FLIGHT = 50;
const USERS = 10_000;
// No key reaches its limit and none expires while it is measured.
const LIMIT = 100_000;
const WINDOW = '1h';
const WINDOW_S = 3600;

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
redis.call('SET', KEYS[1], tonumber(v or '0') + ARGV[1], 'PX', ARGV[2])
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

/** REQUESTS requests of `decide`, IN_FLIGHT at a time, over `users` users numbered from `first`. */
async function drive(decide, users, first = 0) {
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) await decide(first + (next++ % users));
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

/**
 * One measurement of a variant in one shape. Both first drive REQUESTS requests over `users` users (scripts
 * loaded, code warm, those keys written). 'existing': the measured requests go to those users again, whose keys
 * exist, as in a running app. 'new': they go to REQUESTS users never seen, so each decision creates its key.
 */
async function measure(decide, decisions, users, shape) {
  await drive(decide, users);
  await admin.config('RESETSTAT');
  const measured = shape === 'new' ? () => drive(decide, REQUESTS, USERS) : () => drive(decide, users);
  const ir = callgrind ? await instructions(measured) : (await measured(), undefined);
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

// The hot-user variants measure keys that stay hot: they have no 'new' shape.
const shapesOf = (users) => (users === USERS ? SHAPES : ['existing']);
const loadBefore = loadAverage();
const rounds = Object.fromEntries(VARIANTS.map(([name]) => [name, { existing: [], new: [] }]));
const memory = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, [decide, decisions, users = USERS]] of VARIANTS) {
    for (const shape of shapesOf(users)) {
      await admin.flushall();
      rounds[name][shape].push(await measure(decide, decisions, users, shape));
      if (round === 0 && shape === 'existing') {
        // three of the variant's keys (Redis was flushed before it; identities are hashed in this module's keys)
        const keys = (await admin.keys('*')).sort().slice(0, 3);
        memory[name] = await Promise.all(keys.map(memoryOf));
      }
    }
  }
}
const loadAfter = loadAverage();

/** The medians and spreads of one variant's measurements in one shape (undefined when it has none). */
function summarize(measurements) {
  if (measurements.length === 0) return undefined;
  const us = measurements.map((r) => r.usPerDecision);
  const commands = {};
  for (const c of Object.keys(measurements[0].perCommand)) {
    commands[c] = {
      callsPerRequest: median(measurements.map((r) => r.perCommand[c]?.callsPerRequest ?? 0)),
      usecPerDecision: median(measurements.map((r) => r.perCommand[c]?.usecPerDecision ?? 0)),
    };
  }
  const ir = measurements.map((r) => r.irPerDecision).filter((x) => x !== undefined);
  return {
    usPerDecision: median(us),
    spread: [Math.min(...us), Math.max(...us)],
    irPerDecision: ir.length > 0 ? median(ir) : undefined,
    commands,
  };
}

const results = Object.fromEntries(
  VARIANTS.map(([name, [, decisions]]) => [
    name,
    {
      decisions,
      ...Object.fromEntries(SHAPES.map((shape) => [shape, summarize(rounds[name][shape])])),
      memory: memory[name],
    },
  ]),
);
for (const shape of SHAPES) {
  const flex = results['rate-limiter-flexible']?.[shape];
  for (const r of Object.values(results)) {
    const x = r[shape];
    if (x === undefined || flex === undefined) continue;
    x.ratioToFlexible = x.usPerDecision / flex.usPerDecision;
    if (flex.irPerDecision && x.irPerDecision) x.irRatioToFlexible = x.irPerDecision / flex.irPerDecision;
  }
}
const out = {
  rounds: ROUNDS,
  requests: REQUESTS,
  inFlight: IN_FLIGHT,
  users: USERS,
  hotUsers: HOT_USERS,
  loadBefore,
  loadAfter,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  callgrind,
  results,
};
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);

if (process.argv.includes('--markdown')) {
  const file = process.env.BENCH_OUT ?? fileURLToPath(new URL('RESULTS-redis-probe.md', import.meta.url));
  writeResults(file, markdown(out, OUTER));
}
admin.disconnect();
pipelined.disconnect();
for (const store of stores) store.client.disconnect();
server.kill('SIGTERM');
