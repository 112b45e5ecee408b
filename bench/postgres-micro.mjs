// PostgreSQL store micro-benchmark, in a process of its own:
// `node bench/postgres-micro.mjs [--seconds=3] [--repetitions=5] [--in-flight=50] [--floor] [label=]<dist folder>...`
// (`npm run bench:postgres -- base=/path/to/old/dist new=dist` from the repository root).
// Calls per second of PostgresRateLimitStore.consume() with 50 calls in flight over 10,000 keys, for 1 policy
// (sliding window counter) and for 3 policies of mixed algorithms in one call (sliding window counter, token
// bucket, GCRA), for each built copy of the library given (so an old build and a new one are compared in the
// same run, on the same server). Each store has a schema of its own and a pg Pool of 10 connections (the size
// of the module's own pool). Beside the calls per second: this process's CPU µs per decision
// (process.cpuUsage) and the server's, summed over the pool's backends (/proc/<pid>/stat; PostgreSQL on this
// machine). --floor adds a named `SELECT $1::text` through the same kind of pool: what pg and a round trip
// cost by themselves. --in-flight takes a list (`--in-flight=1,50`: also one call at a time, the latency of a
// store that is not busy). Every measurement is repeated, subjects interleaved (in reverse order every other
// repetition); medians and spreads (min–max).
// Prints a table, then one line of JSON. BENCH_PG_URL: default postgres://postgres@127.0.0.1:5432/test.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import pg from 'pg';

const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const args = process.argv.slice(2);
const option = (name, fallback) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SECONDS = option('seconds', 3);
const REPETITIONS = option('repetitions', 5);
const FLOOR = args.includes('--floor');
const IN_FLIGHTS = (args.find((a) => a.startsWith('--in-flight='))?.split('=')[1] ?? '50').split(',').map(Number);
const KEYS = 10_000;
const POOL_SIZE = 10;
const LIMIT = 1_000_000_000;
// GCRA holds a limit exactly only when its emission interval is a whole µs (validation refuses others):
// 60,000,000 a minute is one per µs, still far above what is sent.
const GCRA_LIMIT = 60_000_000;
const dists = args
  .filter((a) => !a.startsWith('--'))
  .map((a, i) => (a.includes('=') ? a.split('=') : [`dist${i + 1}`, a]))
  .map(([label, dir]) => ({ label, dir: resolve(dir) }));
if (dists.length === 0) dists.push({ label: 'dist', dir: resolve('dist') });

const TICK_US = 1e6 / 100; // USER_HZ; Linux reports /proc CPU times in 1/100 s

/** CPU time in µs (user + system) of the processes `pids`, from /proc. */
function cpuOf(pids) {
  let ticks = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * TICK_US;
}

/** A pool of POOL_SIZE open connections, named so that their backends can be found. */
async function openPool(name) {
  // idle connections stay open, so that the backends found here are the ones that serve the pool
  const pool = new pg.Pool({ connectionString: PG_URL, max: POOL_SIZE, idleTimeoutMillis: 0, application_name: name });
  const clients = await Promise.all(Array.from({ length: POOL_SIZE }, () => pool.connect()));
  const pids = [];
  for (const client of clients) pids.push((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  clients.forEach((client) => client.release());
  return { pool, pids };
}

/** Keeps `inFlight` calls of `call(i)` going for `ms`; calls/s, and CPU µs per call here and in the server. */
async function measure(call, pids, ms, inFlight) {
  let done = 0;
  let next = 0;
  const server = cpuOf(pids);
  const cpu = process.cpuUsage();
  const start = performance.now();
  const deadline = start + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) {
        await call(next++ % KEYS);
        done++;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const { user, system } = process.cpuUsage(cpu);
  return {
    opsPerSec: done / (elapsed / 1000),
    nodeCpuUs: (user + system) / done,
    serverCpuUs: (cpuOf(pids) - server) / done,
  };
}

const identities = Array.from({ length: KEYS }, (_, i) => `user:${i}`);

/** The store of one built copy of the library, on a schema of its own, and its two subjects. */
async function storeSubjects({ label, dir }) {
  const lib = await import(pathToFileURL(`${dir}/index.js`).href);
  const schema = `bench_pgmicro_${process.pid}_${label.replace(/\W/g, '_')}`;
  const { pool, pids } = await openPool(`pgmicro-${label}`);
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const store = new lib.PostgresRateLimitStore({ pool, schema, pruneIntervalMs: 0 });
  await store.migrate();
  const policy = (name, algorithm) =>
    lib.validatePolicy({ name, algorithm, limit: algorithm === 'gcra' ? GCRA_LIMIT : LIMIT, window: '1m' });
  const one = [policy('per-user', 'sliding-window-counter')];
  const three = [...one, policy('burst', 'token-bucket'), policy('smooth', 'gcra')];
  const items = (policies) => identities.map((key) => policies.map((p) => ({ policy: p, key, cost: 1 })));
  const oneItems = items(one);
  const threeItems = items(three);
  const close = async () => {
    await store.close();
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  };
  return [
    { name: `${label}: 1 policy`, policies: 1, pids, close, call: (i) => store.consume(oneItems[i]) },
    {
      name: `${label}: 3 policies`,
      policies: 3,
      pids,
      close: () => undefined,
      call: (i) => store.consume(threeItems[i]),
    },
  ];
}

async function floorSubject() {
  const { pool, pids } = await openPool('pgmicro-floor');
  const query = { name: 'pgmicro-floor', text: 'SELECT $1::text AS k', values: [''] };
  return {
    name: 'floor: pg named SELECT $1::text',
    policies: 1,
    pids,
    close: () => pool.end(),
    call: (i) => pool.query({ ...query, values: [identities[i]] }),
  };
}

const subjects = [];
for (const dist of dists) subjects.push(...(await storeSubjects(dist)));
if (FLOOR) subjects.push(await floorSubject());

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const runs = IN_FLIGHTS.flatMap((inFlight) => subjects.map((subject) => ({ ...subject, inFlight })));
const keyOf = (run) => `${run.name}\t${run.inFlight}`;
for (const run of runs) await measure(run.call, run.pids, 1000, run.inFlight); // warm-up
const samples = new Map(runs.map((run) => [keyOf(run), []]));
for (let r = 0; r < REPETITIONS; r++) {
  for (const run of r % 2 === 0 ? runs : [...runs].reverse()) {
    samples.get(keyOf(run)).push(await measure(run.call, run.pids, SECONDS * 1000, run.inFlight));
  }
}
for (const subject of subjects) await subject.close();

const summary = (values, field) => {
  const xs = values.map((v) => v[field]);
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
};
const results = runs.map((run) => {
  const values = samples.get(keyOf(run));
  return {
    name: run.name,
    policies: run.policies,
    inFlight: run.inFlight,
    callsPerSec: summary(values, 'opsPerSec'),
    nodeCpuUsPerCall: summary(values, 'nodeCpuUs'),
    serverCpuUsPerCall: summary(values, 'serverCpuUs'),
    samples: values,
  };
});
const cell = ({ median: m, min, max }, digits) =>
  `${m.toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})`;
const lines = [
  `${REPETITIONS} interleaved repetitions × ${SECONDS} s, ${KEYS} keys, pool of ${POOL_SIZE}; median (min–max)`,
  '| subject | in flight | decisions (consume calls)/s | Node CPU µs/decision | server CPU µs/decision |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...results.map(
    (r) =>
      `| ${r.name} | ${r.inFlight} | ${cell(r.callsPerSec, 0)} | ${cell(r.nodeCpuUsPerCall, 1)} | ${cell(r.serverCpuUsPerCall, 1)} |`,
  ),
];
process.stdout.write(`${lines.join('\n')}\n${JSON.stringify(results)}\n`);
