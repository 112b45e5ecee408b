// The benchmark: `npm run bench` (or `node bench/run.mjs [--quick]` once `npm --prefix bench install` ran).
// Starts its own redis-server and one Nest app per variant, loads each from a separate autocannon process in
// interleaved rounds, runs the store micro-benchmark, redis-benchmark, and the memory measurements, stops
// everything it started, and writes RESULTS.md and results.svg (into bench/; with --quick into a temporary
// folder unless BENCH_OUT is set, so a quick check never replaces the committed results).
//
// Environment: BENCH_ROUNDS (default 5, quick 2), BENCH_SECONDS per load (default 5, quick 2), BENCH_OUT (the
// folder for RESULTS.md and results.svg), BENCH_NOTE (a sentence added to RESULTS.md, e.g. about the machine).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort, ping } from './net.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(BENCH, '..');
const PEERS = join(BENCH, 'peers.mjs');

const quick = process.argv.includes('--quick');
const ROUNDS = positive('BENCH_ROUNDS', quick ? 2 : 5);
const SECONDS = positive('BENCH_SECONDS', quick ? 2 : 5);
const BENCHMARK_REQUESTS = quick ? 50_000 : 200_000;
const OUT = process.env.BENCH_OUT ?? (quick ? mkdtempSync(join(os.tmpdir(), 'nest-rate-limit-bench-')) : BENCH);

/** The variants, in the order of every round; `none` is the baseline. */
const VARIANTS = [
  { name: 'none', load: 'spread', what: 'no rate limiter' },
  { name: 'memory', load: 'spread', what: 'this module, memory store, 1 policy (sliding-window-counter), 1,000 users' },
  { name: 'memory-hot', load: 'hot', what: 'the same, every request on one key' },
  {
    name: 'memory-ip',
    load: 'hot',
    what: "this module, memory store, default key ('user', no user known, so the client IP: one key), decided by the interceptor",
  },
  { name: 'redis-1', load: 'spread', what: 'this module, Redis, 1 policy (sliding-window-counter), 1,000 users' },
  {
    name: 'redis-3',
    load: 'spread',
    what: 'this module, Redis, 3 policies (sliding-window-counter, token-bucket, gcra) in one EVALSHA, 1,000 users',
  },
  {
    name: 'postgres-1',
    load: 'spread',
    what: 'this module, PostgreSQL, 1 policy (sliding-window-counter), 1,000 users',
  },
  {
    name: 'postgres-3',
    load: 'spread',
    what: 'this module, PostgreSQL, 3 policies (sliding-window-counter, token-bucket, gcra) in one statement, 1,000 users',
  },
  {
    name: 'throttler-memory',
    load: 'spread',
    what: '@nestjs/throttler, default memory storage, tracker x-user, 1,000 users',
  },
  {
    name: 'throttler-memory-hot',
    load: 'hot',
    what: '@nestjs/throttler exactly as `forRoot([{ ttl: 60000, limit: 1e9 }])`: tracker = client IP, one key',
  },
  {
    name: 'throttler-redis',
    load: 'spread',
    what: '@nestjs/throttler + @nest-lab/throttler-storage-redis, tracker x-user, 1,000 users',
  },
];

/** Runs SQL on the benchmark's PostgreSQL with psql and returns the last line of its output. */
function psql(sql) {
  const result = spawnSync('psql', [process.env.BENCH_PG_URL, '-qtAc', sql], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`);
  return result.stdout.trim().split('\n').at(-1);
}

function positive(name, fallback) {
  const value = process.env[name] === undefined ? fallback : Number(process.env[name]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be an integer >= 1`);
  return value;
}

const log = (message) => process.stdout.write(`[bench] ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// ---------------------------------------------------------------- processes (every one is stopped at the end)

const children = new Set();

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Stops a child: SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
async function stop(child, graceMs = 3000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

async function stopAll() {
  await Promise.all([...children].map((child) => stop(child)));
}

process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: stopping what the benchmark started`);
    void stopAll().finally(() => process.exit(130));
  });
}

/** Runs a node script to completion and returns its stdout; tries again if dist/ is being rebuilt meanwhile. */
async function runNode(args, { timeoutMs, attempts = 3 } = {}) {
  for (let attempt = 1; ; attempt++) {
    const child = track(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? s)));
    clearTimeout(timer);
    if (code === 0) return stdout;
    const message = `node ${args.join(' ')} exited with ${code}: ${stderr.trim().slice(-2000)}`;
    if (attempt >= attempts || !/ERR_MODULE_NOT_FOUND|Cannot find module/.test(stderr)) throw new Error(message);
    log(`${message}\n  (dist/ being rebuilt by someone else?) trying again in 5 s`);
    await sleep(5000);
  }
}

const lastJsonLine = (text) => JSON.parse(text.trim().split('\n').at(-1));

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(os.tmpdir(), 'nest-rate-limit-bench-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = track(spawn('redis-server', args, { stdio: 'ignore' }));
  const deadline = Date.now() + 10_000;
  while (!(await ping(port))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`redis-server did not start on ${port}`);
    await sleep(50);
  }
  return {
    port,
    pid: child.pid,
    url: `redis://127.0.0.1:${port}`,
    cli: (...cmd) => execFileSync('redis-cli', ['-p', String(port), ...cmd], { encoding: 'utf8' }).trim(),
    async stop() {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts `bench/app.mjs <variant>` and waits for the port it prints. */
async function startApp(variant, redisUrl, attempts = 3) {
  for (let attempt = 1; ; attempt++) {
    const child = track(
      spawn(process.execPath, ['--import', PEERS, join(BENCH, 'app.mjs'), variant, redisUrl], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      }),
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    try {
      const port = await new Promise((resolve, reject) => {
        let stdout = '';
        const timer = setTimeout(() => reject(new Error(`${variant} did not print its port within 60 s`)), 60_000);
        child.stdout.on('data', (d) => {
          stdout += d;
          const line = stdout.split('\n');
          if (line.length > 1) {
            clearTimeout(timer);
            resolve(Number(line[0]));
          }
        });
        child.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`app ${variant} exited with ${code}: ${stderr.trim().slice(-2000)}`));
        });
      });
      child.stderr.on('data', (d) => process.stderr.write(`[${variant}] ${d}`));
      const stats = () =>
        new Promise((resolve) => {
          child.once('message', resolve);
          child.send('stats');
        });
      return { variant, port, child, stats };
    } catch (error) {
      await stop(child);
      if (attempt >= attempts || !/ERR_MODULE_NOT_FOUND|Cannot find module/.test(stderr)) throw error;
      log(`${error.message}\n  (dist/ being rebuilt by someone else?) trying again in 5 s`);
      await sleep(5000);
    }
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) a process has used so far, in ms; undefined where there is no /proc. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS; // utime, stime
  } catch {
    return undefined;
  }
}

/**
 * Loads the app from a separate process. Besides autocannon's figures, the CPU time the app process and
 * redis-server used per request: unlike req/s, it hardly changes when other work takes the cores.
 */
async function load(app, seconds, mode, redisPid) {
  const failuresBefore = (await app.stats()).storeFailures;
  const appBefore = cpuMs(app.child.pid);
  const redisBefore = cpuMs(redisPid);
  const out = await runNode([join(BENCH, 'load.mjs'), String(app.port), String(seconds), mode], {
    timeoutMs: (seconds + 60) * 1000,
    attempts: 1,
  });
  const result = lastJsonLine(out);
  const appCpu = cpuMs(app.child.pid) - appBefore;
  const redisCpu = cpuMs(redisPid) - redisBefore;
  const duration = result.requests / result.rps;
  return {
    ...result,
    storeFailures: (await app.stats()).storeFailures - failuresBefore,
    appCpuUs: (appCpu * 1000) / result.requests,
    redisCpuUs: (redisCpu * 1000) / result.requests,
    appBusy: appCpu / (duration * 1000),
  };
}

// ------------------------------------------------------------------------------------------ machine and load

/** CPU time used on the whole machine over `ms`, in cores (2 = both cores busy): what else is running. */
async function machineBusy(ms = 2000) {
  const read = () => {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    const n = fields.map(Number);
    const idle = n[3] + n[4];
    return { idle, total: n.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = read();
    await sleep(ms);
    const b = read();
    return (1 - (b.idle - a.idle) / (b.total - a.total)) * os.availableParallelism();
  } catch {
    return undefined;
  }
}

function cpuModel() {
  try {
    return /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model;
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

function versionOf(name) {
  try {
    return JSON.parse(readFileSync(join(BENCH, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return 'not installed';
  }
}

function git(...args) {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

// ------------------------------------------------------------------------------------------- redis-benchmark

function redisBenchmark(port, pipeline, command) {
  const args = ['-p', String(port), '-c', '50', '-n', String(BENCHMARK_REQUESTS), '-r', '10000', '--csv'];
  if (pipeline > 1) args.push('-P', String(pipeline));
  const out = execFileSync('redis-benchmark', [...args, ...command], { encoding: 'utf8' });
  const row = out
    .trim()
    .split('\n')
    .map((line) => line.split('","').map((cell) => cell.replace(/^"|"$/g, '')))
    .find((cells) => cells[0] !== 'test');
  return { rps: Number(row[1]), p50: Number(row[4]), p99: Number(row[6]) };
}

/**
 * The library's script with the makers of the fixed window, both sliding windows and the token bucket building an
 * empty table (same dispatcher). A maker is a `local function make_X()` of its .lua file, whose body ends at the
 * next unindented `end` (StyLua's format).
 */
function gcraOnlyScript(script) {
  let trimmed = script;
  for (const table of ['FW', 'SWL', 'SWC', 'TB']) {
    const maker = new RegExp(`^local function make_${table}\\(\\)\\n[\\s\\S]*?^end$`, 'm');
    if (!maker.test(trimmed)) return undefined;
    trimmed = trimmed.replace(maker, `local function make_${table}() return {} end`);
  }
  return trimmed;
}

async function runRedisBenchmark(redis) {
  const { RATE_LIMIT_SCRIPT } = await import('../dist/stores/redis/rate-limit.lua.js');
  const sha = redis.cli('SCRIPT', 'LOAD', RATE_LIMIT_SCRIPT);
  // As RedisRateLimitStore.run for a 1-policy consume: 1 key; 'consume', now ('' = the script reads TIME),
  // ttl slack, then per item: algorithm code (5 = gcra), limit, window ms, capacity, cost. 1,000 per hour: no
  // key reaches its limit (at most 2 × 200,000 / 10,000 calls each) and none expires during the run.
  const ours = (s) => [
    'EVALSHA',
    s,
    '1',
    'rl:{rb:user:__rand_int__}',
    'consume',
    '',
    '1000',
    '5',
    '1000',
    '3600000',
    '1000',
    '1',
  ];
  const scripts = [{ name: 'this module’s script (GCRA, 1 policy)', command: ours(sha) }];
  const trimmed = gcraOnlyScript(RATE_LIMIT_SCRIPT);
  if (trimmed !== undefined) {
    scripts.push({
      name: 'the same script with only the GCRA twin defined',
      command: ours(redis.cli('SCRIPT', 'LOAD', trimmed)),
    });
  }
  const { ThrottlerStorageRedisService } = await import('@nest-lab/throttler-storage-redis');
  const throttlerScript = ThrottlerStorageRedisService.prototype.getScriptSrc.call({});
  scripts.push({
    name: '@nest-lab/throttler-storage-redis’s script (sent by EVAL on every call; here EVALSHA)',
    command: [
      'EVALSHA',
      redis.cli('SCRIPT', 'LOAD', throttlerScript),
      '2',
      '{k__rand_int__:default}:hits',
      '{k__rand_int__:default}:blocked',
      'default',
      '3600000',
      '1000',
      '3600000',
    ],
  });
  scripts.push({
    name: 'floor: EVALSHA of `return 1`',
    command: ['EVALSHA', redis.cli('SCRIPT', 'LOAD', 'return 1'), '0'],
  });
  scripts.push({ name: 'floor: INCR (no script)', command: ['INCR', 'k:__rand_int__'] });

  const rows = [];
  for (const { name, command } of scripts) {
    redis.cli('FLUSHALL');
    for (const pipeline of [16, 1]) {
      log(`redis-benchmark: ${name}, ${pipeline > 1 ? `-P ${pipeline}` : 'no pipelining'}`);
      rows.push({ name, pipeline, ...redisBenchmark(redis.port, pipeline, command) });
      // __rand_int__ must spread the keys: count the distinct keys the first run created
      if (rows.length === 1) rows[0].distinctKeys = Number(redis.cli('DBSIZE'));
    }
  }
  redis.cli('FLUSHALL');
  return { sha, rows };
}

// ----------------------------------------------------------------------------------------------------- output

const fmt = (n, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : '–';

/** A Markdown table with padded columns; `align` is 'l' or 'r' per column. */
function table(head, rows, align) {
  const cells = [head, ...rows].map((row) => row.map(String));
  const width = head.map((_, i) => Math.max(3, ...cells.map((row) => row[i].length)));
  const pad = (s, i) => (align[i] === 'r' ? s.padStart(width[i]) : s.padEnd(width[i]));
  const line = (row) => `| ${row.map(pad).join(' | ')} |`;
  const rule = `| ${width.map((w, i) => (align[i] === 'r' ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join('\n');
}

function svgChart(http, subtitle) {
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const rowH = 30;
  const left = 190;
  const barW = 460;
  const top = 64;
  const width = left + barW + 90;
  const height = top + http.length * rowH + 40;
  const max = Math.max(1, ...http.map((v) => v.ratio)) * 1.05;
  const x = (ratio) => left + (ratio / max) * barW;
  const colour = (name) => (name === 'none' ? '#9e9e9e' : name.startsWith('throttler') ? '#e8833a' : '#2f6db5');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="16" font-weight="bold">Throughput relative to no rate limiter (higher is better)</text>`,
    `<text x="16" y="44" fill="#555555">${esc(subtitle)}</text>`,
  ];
  http.forEach((v, i) => {
    const y = top + i * rowH;
    parts.push(`<text x="${left - 10}" y="${y + 19}" text-anchor="end">${esc(v.name)}</text>`);
    parts.push(
      `<rect x="${left}" y="${y + 5}" width="${(x(v.ratio) - left).toFixed(1)}" height="${rowH - 10}" fill="${colour(v.name)}"/>`,
    );
    parts.push(`<text x="${(x(v.ratio) + 6).toFixed(1)}" y="${y + 19}">${v.ratio.toFixed(2)}×</text>`);
  });
  const one = x(1).toFixed(1);
  const bottom = top + http.length * rowH;
  parts.push(`<line x1="${one}" y1="${top}" x2="${one}" y2="${bottom}" stroke="#333333" stroke-dasharray="4 3"/>`);
  parts.push(`<text x="${one}" y="${bottom + 16}" text-anchor="middle" fill="#333333">1.0 = no limiter</text>`);
  parts.push(
    `<text x="16" y="${height - 8}" fill="#555555">blue: nest-rate-limit · orange: @nestjs/throttler · grey: baseline</text>`,
  );
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function report(r) {
  const httpTable = table(
    [
      'variant',
      'median req/s',
      'ratio to none',
      'added µs/request (1/rps)',
      'app CPU µs/request',
      'added app CPU µs/request',
      'Redis CPU µs/request',
      'app CPU busy',
      'p50 ms',
      'p99 ms',
    ],
    r.http.map((v) => [
      v.name,
      fmt(v.rps),
      v.name === 'none' ? '1.00' : v.ratio.toFixed(2),
      v.name === 'none' ? '0' : fmt(v.addedUs, 1),
      fmt(v.appCpuUs, 1),
      v.name === 'none' ? '0' : fmt(v.addedCpuUs, 1),
      fmt(v.redisCpuUs, 1),
      `${fmt(v.appBusy * 100)}%`,
      fmt(v.p50),
      fmt(v.p99),
    ]),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const legend = r.http.map((v) => `- \`${v.name}\`: ${v.what}`).join('\n');
  const roundsTable = table(
    ['variant', ...r.rounds.map((_, i) => `round ${i + 1}: req/s, app CPU µs/req`)],
    r.http.map((v) => [
      v.name,
      ...r.rounds.map((round) => `${fmt(round[v.name].rps)}, ${fmt(round[v.name].appCpuUs, 1)}`),
    ]),
    ['l', ...r.rounds.map(() => 'r')],
  );
  const microTable = table(
    ['client', 'in flight', 'calls/s (median)', 'each repetition'],
    r.micro.map((m) => [m.name, m.concurrency, fmt(m.opsPerSec), m.samples.map((x) => fmt(x)).join(', ')]),
    ['l', 'r', 'r', 'r'],
  );
  const rbTable = table(
    ['script', 'pipeline', 'ops/s', 'p50 ms', 'p99 ms'],
    r.redisBenchmark.rows.map((b) => [
      b.name,
      b.pipeline === 1 ? 'none' : `-P ${b.pipeline}`,
      fmt(b.rps),
      b.p50,
      b.p99,
    ]),
    ['l', 'l', 'r', 'r', 'r'],
  );
  const redisMemTable = table(
    ['store / algorithm', 'bytes/key (used_memory Δ / 10,000)', 'bytes/key (MEMORY USAGE)', 'key', 'value'],
    r.redisMemory.map((m) => [
      m.name,
      fmt(m.bytesPerKeyUsedMemory),
      fmt(m.bytesPerKeyMemoryUsage),
      `\`${m.exampleKey}\``,
      `\`${m.exampleValue}\``,
    ]),
    ['l', 'r', 'r', 'l', 'l'],
  );
  const heapTable = table(
    ['store', 'keys', 'heap MB', 'bytes/key', 'writes/s'],
    r.heap.map((h) => [h.label, fmt(h.keys), fmt(h.heapBytes / 1e6, 1), fmt(h.bytesPerKey), fmt(h.writesPerSec)]),
    ['l', 'r', 'r', 'r', 'r'],
  );
  const m = r.machine;
  const busy = (b) => (b === undefined ? 'unknown' : `${b.toFixed(2)} of ${m.cores} cores`);
  const sharedNote =
    Math.max(m.busyBefore ?? 0, m.busyAfter ?? 0) > 0.25 || m.loadMax > 3.5
      ? '**The machine was shared**: other work used CPU while the benchmark ran (see the idle readings and load ' +
        'averages above). Ratios are taken within a round, which cancels slow drifts, but not bursts; treat ' +
        'differences of a few percent as noise.'
      : 'The machine looked otherwise idle.';
  const v = r.versions;
  return `# Benchmark results

Generated by \`npm run bench${r.quick ? ' -- --quick' : ''}\` on ${r.date}: ${r.rounds.length} rounds × ${r.seconds} s per
variant, after a warm-up round. Raw per-round numbers are at the end.

## Machine

- ${m.cores} cores (\`nproc\`: ${m.cores}), ${m.cpu}, ${fmt(m.memGiB, 1)} GiB of memory, ${m.platform}
- Load average at the start ${m.loadStart.map((l) => l.toFixed(2)).join(' / ')}, at the end
  ${m.loadEnd.map((l) => l.toFixed(2)).join(' / ')}, highest 1-min reading between loads ${m.loadMax.toFixed(2)}
- CPU used by other processes while the benchmark's own were idle: ${busy(m.busyBefore)} before, ${busy(m.busyAfter)} after
- ${sharedNote}${r.note ? `\n- ${r.note}` : ''}

Everything runs on these ${m.cores} cores: the app under test (one Node process), the load generator (another),
and redis-server. The numbers are comparisons between variants on the same machine, not capacity figures.

## Versions

| component | version |
| --- | --- |
| Node.js | ${v.node} |
| nest-rate-limit | ${v.library} (git ${v.git || 'unknown'}${v.dirty ? ', lib/ with uncommitted changes' : ''}; dist/ built ${v.distBuilt}) |
| @nestjs/common, core, platform-express | ${v.nestCommon}, ${v.nestCore}, ${v.nestExpress} |
| @nestjs/throttler | ${v.throttler} |
| @nest-lab/throttler-storage-redis | ${v.throttlerRedis} |
| rate-limiter-flexible | ${v.flexible} |
| ioredis | ${v.ioredis} |
| redis-server | ${v.redis} |
| autocannon | ${v.autocannon} |
${
  v.distAtEnd === v.distBuilt
    ? ''
    : `\n**dist/ was rebuilt during the run** (at ${v.distAtEnd}, git ${v.gitAtEnd} at the end) by concurrent work: the HTTP apps ran the build of ${v.distBuilt}; the parts after the rebuild may have run the newer one.\n`
}
## Method

- **HTTP.** One Nest 12 (Express) app per variant, each in its own process, with one route, \`GET /hello\` →
  \`{"hello":"world"}\`, and nothing else. The load comes from a separate process: autocannon, 50 connections,
  no pipelining, ${r.seconds} s per load, an \`x-user\` header over 1,000 users (prebuilt requests, shuffled), or one
  user for the \`-hot\` / \`-ip\` variants. Limits are 10^9 per minute, so nothing is denied (every response was
  checked to be 2xx): this measures the limiter's overhead. One warm-up round, then ${r.rounds.length} rounds, each
  loading every variant once in the order of the table. Per variant: the median req/s over the rounds; the
  **ratio to \`none\` of the same round**, median over the rounds; and the **added server time per request**,
  \`1/rps(variant) − 1/rps(none)\` of the same round in µs, median over the rounds (the app's event loop is the
  bottleneck, so 1/rps is its time per request, though it shares the cores with the load generator and Redis).
  Because req/s moves with whatever else runs on the machine, the table also gives the **CPU time of the app
  process per request** (user + system from \`/proc/<pid>/stat\` over the load, divided by the requests served)
  and the same for redis-server: these hardly depend on other load, so \`added app CPU µs/request\` (variant
  minus \`none\`, same round, median) is the steadiest measure of the limiter's cost in the app. \`app CPU
  busy\` is that CPU time over the load's duration: near 100% the app was the bottleneck; well below, it was
  waiting for CPU (taken by the load generator, Redis, or other work) or for Redis.
  This module's variants run with \`timeout: 2000\` (default 100 ms; see the note on store failures below the
  table) and send its default IETF \`RateLimit\` headers; @nestjs/throttler sends its
  \`X-RateLimit-*\` headers. @nestjs/throttler's default tracker is the client IP, which is one key here, so its
  spread variants use \`getTracker: req => req.headers['x-user']\`; \`throttler-memory-hot\` is its default.
- **Store micro-benchmark.** One Node process, one ioredis connection per client, calls in flight kept at 50 or
  200 for ${Math.min(r.seconds, 3)} s each (after 1 s of warm-up), ${r.rounds.length} interleaved repetitions, median: \`RedisRateLimitStore.consume()\` with one GCRA policy over
  10,000 keys; the same \`EVALSHA\` sent straight through ioredis (what the store adds is the difference); and
  rate-limiter-flexible's \`RateLimiterRedis.consume()\` (a fixed window: \`SET NX\` + \`INCRBY\` + \`PTTL\` in a script).
- **redis-benchmark.** \`redis-benchmark -c 50 -n ${fmt(BENCHMARK_REQUESTS)} -r 10000\`, with \`-P 16\` and without,
  sending \`EVALSHA ${r.redisBenchmark.sha} 1 rl:{rb:user:__rand_int__} consume '' 1000 5 1000 3600000 1000 1\`
  — exactly what \`RedisRateLimitStore.run\` sends for a one-policy GCRA consume (\`''\`: the script reads Redis
  \`TIME\`). \`__rand_int__\` does spread the keys: the first run created ${fmt(r.redisBenchmark.rows[0]?.distinctKeys)}
  distinct keys. For scale: the same script with only the GCRA twin defined, @nest-lab's script, and two floors.
- **Redis memory per key.** For each algorithm, \`FLUSHALL\`, then one consume on each of 10,000 identities
  (\`user:12345\`) at the default prefix \`rl:\` and policy name \`per-user\` (100 per hour): the growth of
  \`used_memory\` / 10,000 (includes Redis's dictionaries and expiry entries), and the mean \`MEMORY USAGE key SAMPLES 0\`
  of 200 keys. The same for @nest-lab's storage (keys as ThrottlerGuard makes them: a SHA-256 of class, handler,
  throttler and tracker) and rate-limiter-flexible.
- **In-memory store footprint.** A child process with \`--expose-gc\`: heap used (after a full GC, before and
  after) by a \`MemoryRateLimitStore\` holding 1,000,000 keys, one consume each; the same for @nestjs/throttler's
  \`ThrottlerStorageService\`.

## HTTP: throughput and overhead

${httpTable}

${legend}

${
  r.storeProblems.length === 0
    ? 'No store failure was reported during the measured rounds: every request of this module’s variants was decided by its store.'
    : `**Store failures** (onError) during the measured rounds — those requests were let through undecided (fail-open), so the variants below did less work than the limiter normally does:\n\n${r.storeProblems.map((p) => `- ${p}`).join('\n')}`
}

PostgreSQL statements per request (committed transactions counted by \`pg_stat_database\` over one more load of
each variant; every statement is a transaction of its own): ${Object.entries(r.statements)
    .map(([name, n]) => `${name} ${n.toFixed(2)}`)
    .join(', ')}.

![ratio to no limiter](results.svg)

## Store micro-benchmark (Redis, one connection)

${microTable}

## redis-benchmark: the Lua script alone

${rbTable}

## Redis memory per tracked key

${redisMemTable}

## In-memory store footprint

${heapTable}

## Raw HTTP rounds

${roundsTable}
`;
}

// -------------------------------------------------------------------------------------------------------- main

async function main() {
  for (const binary of ['redis-server', 'redis-benchmark', 'redis-cli']) {
    if (spawnSync(binary, ['--version']).error !== undefined) {
      throw new Error(`${binary} not found on PATH: install redis (\`sudo apt-get install redis-server\`)`);
    }
  }
  if (!existsSync(join(BENCH, 'node_modules', 'autocannon'))) {
    throw new Error('bench dependencies missing: run `npm --prefix bench install` (npm run bench does)');
  }
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) {
    log('dist/ is missing: npm run build');
    const build = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  mkdirSync(OUT, { recursive: true });

  const started = Date.now();
  const distMtime = () => statSync(join(ROOT, 'dist', 'index.js')).mtime.toISOString();
  const distAtStart = distMtime();
  const gitAtStart = git('rev-parse', '--short', 'HEAD');
  const machine = {
    cores: os.availableParallelism(),
    cpu: cpuModel(),
    memGiB: os.totalmem() / 2 ** 30,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadStart: os.loadavg(),
    loadMax: os.loadavg()[0],
    busyBefore: await machineBusy(),
  };
  log(
    `${quick ? 'quick' : 'full'} run: ${ROUNDS} rounds × ${SECONDS} s, ${VARIANTS.length} variants; output in ${OUT}`,
  );

  const redis = await startRedis();
  log(`redis-server on ${redis.port}`);
  // The PostgreSQL variants use the machine's server (BENCH_PG_URL), in a schema of their own, dropped at the end.
  process.env.BENCH_PG_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
  process.env.BENCH_PG_SCHEMA = `bench_${process.pid}`;
  psql(`CREATE SCHEMA ${process.env.BENCH_PG_SCHEMA}`);
  process.once('exit', () => psql(`DROP SCHEMA IF EXISTS ${process.env.BENCH_PG_SCHEMA} CASCADE`));

  const apps = [];
  for (const variant of VARIANTS) {
    apps.push({ ...variant, ...(await startApp(variant.name, redis.url)) });
    log(`app ${variant.name} on ${apps.at(-1).port}`);
  }

  const problems = [];
  const storeProblems = [];
  const runRound = async (label) => {
    const round = {};
    for (const app of apps) {
      machine.loadMax = Math.max(machine.loadMax, os.loadavg()[0]);
      const result = await load(app, SECONDS, app.load, redis.pid);
      if (result.storeFailures > 0) {
        storeProblems.push(
          `${label} ${app.name}: ${result.storeFailures} store failures (requests let through undecided)`,
        );
      }
      if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
        problems.push(
          `${label} ${app.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
        );
      }
      round[app.name] = result;
      log(
        `${label} ${app.name.padEnd(22)} ${fmt(result.rps).padStart(7)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms` +
          `  app CPU ${fmt(result.appCpuUs)} µs/req (busy ${fmt(result.appBusy * 100)}%)  Redis ${fmt(result.redisCpuUs)} µs/req`,
      );
    }
    return round;
  };
  await runRound('warm-up');
  const rounds = [];
  for (let i = 1; i <= ROUNDS; i++) rounds.push(await runRound(`round ${i}/${ROUNDS}`));
  // Statements per request on PostgreSQL: the database's committed transactions (each statement is one)
  // over one more load of each PostgreSQL variant, minus the two made by these readings.
  const statements = {};
  for (const app of apps.filter((a) => a.name.startsWith('postgres'))) {
    const before = Number(
      psql(
        'SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()',
      ),
    );
    const result = await load(app, Math.min(SECONDS, 3), app.load, redis.pid);
    await new Promise((resolve) => setTimeout(resolve, 11_000)); // backends flush their statistics within 10 s
    const after = Number(
      psql(
        'SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()',
      ),
    );
    statements[app.name] = (after - before - 2) / result.requests;
    log(`${app.name}: ${statements[app.name].toFixed(3)} statements per request`);
  }
  for (const app of apps) await stop(app.child);
  if (problems.length > 0) throw new Error(`requests were denied or failed:\n${problems.join('\n')}`);

  const http = VARIANTS.map(({ name, what }) => ({
    name,
    what,
    rps: median(rounds.map((r) => r[name].rps)),
    ratio: median(rounds.map((r) => r[name].rps / r.none.rps)),
    addedUs: median(rounds.map((r) => 1e6 / r[name].rps - 1e6 / r.none.rps)),
    p50: median(rounds.map((r) => r[name].p50)),
    p99: median(rounds.map((r) => r[name].p99)),
    appCpuUs: median(rounds.map((r) => r[name].appCpuUs)),
    addedCpuUs: median(rounds.map((r) => r[name].appCpuUs - r.none.appCpuUs)),
    redisCpuUs: median(rounds.map((r) => r[name].redisCpuUs)),
    appBusy: median(rounds.map((r) => r[name].appBusy)),
    storeFailures: rounds.reduce((sum, r) => sum + r[name].storeFailures, 0),
  }));

  log('store micro-benchmark');
  const micro = lastJsonLine(
    await runNode(
      ['--import', PEERS, join(BENCH, 'micro.mjs'), redis.url, String(Math.min(SECONDS, 3)), String(ROUNDS)],
      { timeoutMs: 900_000 },
    ),
  );
  const redisBenchmarkResult = await runRedisBenchmark(redis);
  log('Redis memory per key');
  const redisMemory = lastJsonLine(
    await runNode(['--import', PEERS, join(BENCH, 'redis-memory.mjs'), redis.url], { timeoutMs: 300_000 }),
  );
  await redis.stop();

  const heap = [];
  for (const [subject, label] of [
    ['sliding-window-counter', 'MemoryRateLimitStore, sliding-window-counter'],
    ['gcra', 'MemoryRateLimitStore, gcra'],
    ['throttler', '@nestjs/throttler ThrottlerStorageService'],
  ]) {
    log(`heap of ${label} with 1,000,000 keys`);
    const args = ['--expose-gc', '--max-old-space-size=4096', '--import', PEERS, join(BENCH, 'memory-store.mjs')];
    heap.push({ label, ...lastJsonLine(await runNode([...args, subject, '1000000'], { timeoutMs: 600_000 })) });
  }

  machine.loadEnd = os.loadavg();
  machine.busyAfter = await machineBusy();
  const distAtEnd = distMtime();
  const results = {
    quick,
    date: new Date(started).toISOString().replace(/\.\d+Z$/, 'Z'),
    seconds: SECONDS,
    note: process.env.BENCH_NOTE,
    machine,
    versions: {
      node: process.version,
      library: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
      git: gitAtStart,
      gitAtEnd: git('rev-parse', '--short', 'HEAD'),
      dirty: git('status', '--porcelain', '--', 'lib') !== '',
      distBuilt: distAtStart,
      distAtEnd,
      nestCommon: versionOf('@nestjs/common'),
      nestCore: versionOf('@nestjs/core'),
      nestExpress: versionOf('@nestjs/platform-express'),
      throttler: versionOf('@nestjs/throttler'),
      throttlerRedis: versionOf('@nest-lab/throttler-storage-redis'),
      flexible: versionOf('rate-limiter-flexible'),
      ioredis: versionOf('ioredis'),
      autocannon: versionOf('autocannon'),
      redis: execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim(),
    },
    http,
    rounds,
    storeProblems,
    statements,
    micro,
    redisBenchmark: redisBenchmarkResult,
    redisMemory,
    heap,
  };
  const subtitle = `median of per-round ratios, ${rounds.length} rounds × ${SECONDS} s, ${results.date.slice(0, 10)}, ${machine.cores} cores`;
  writeFileSync(join(OUT, 'RESULTS.md'), report(results));
  writeFileSync(join(OUT, 'results.svg'), svgChart(http, subtitle));
  log(
    `done in ${Math.round((Date.now() - started) / 1000)} s: ${join(OUT, 'RESULTS.md')}, ${join(OUT, 'results.svg')}`,
  );
  for (const v of http) {
    log(
      `${v.name.padEnd(22)} ${fmt(v.rps).padStart(7)} req/s  ×${v.ratio.toFixed(2)}  +${fmt(v.addedUs, 1)} µs/request`,
    );
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`[bench] failed: ${error?.stack ?? error}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
}
