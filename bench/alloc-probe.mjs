// Bytes the app allocates per request: `npm run bench:alloc` (or `node bench/alloc-probe.mjs [--quick]` once
// `npm run build` and `npm --prefix bench install` ran). Each variant is the real Nest 12 + Express app of
// bench/app.mjs in a process of its own, started with a young generation larger than what the measured requests
// allocate (--min/--max-semi-space-size) and --expose-gc: warm-up requests (every user's key exists afterwards),
// a full collection, then the measured requests injected without sockets (bench/alloc-inject.mjs). With no
// collection in between, the heap's growth (used_heap_size) is every byte allocated, kept or garbage; a 'gc'
// PerformanceObserver proves none ran, and a variant in whose measured part one did fails the run. Added bytes are
// the variant's minus the no-limiter app's. Allocation does not depend on the machine's load: the figures
// reproduce on a busy machine. Writes bench/RESULTS-alloc.md (with --quick: a temporary folder unless BENCH_OUT).
//
// Which code allocates: BENCH_HEAP_PROFILE (one process by hand, see bench/heap-diff.mjs).
//
// Environment: BENCH_REPEATS (processes per variant, default 5, quick 1), BENCH_REQUESTS (measured, default
// 4,000), BENCH_SEMI_SPACE_MB (default 512), BENCH_VARIANTS (comma-separated; `none` always runs), BENCH_OUT.
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { flushAll, startRedisServer } from './net.mjs';
import { fmt, loadAverage, median, nodeJson, spread, writeResults } from './stats.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(BENCH, '..');
const quick = process.argv.includes('--quick');
const REPEATS = Number(process.env.BENCH_REPEATS ?? (quick ? 1 : 5));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const USERS = 4000;
const WARM_UP = 2 * Math.max(USERS, REQUESTS);
const IN_FLIGHT = 50;
const SEMI_SPACE_MB = Number(process.env.BENCH_SEMI_SPACE_MB ?? 512);
const OUT = process.env.BENCH_OUT ?? (quick ? mkdtempSync(join(os.tmpdir(), 'nest-rate-limit-alloc-')) : BENCH);

const ALL_VARIANTS = [
  ['none', 'no rate limiter'],
  ['memory', 'this module, memory store, 1 policy (sliding window counter)'],
  ['memory-3', 'this module, memory store, 3 policies of one identity (swc + token bucket + gcra)'],
  ['redis-fixed-window', 'this module, Redis, 1 policy (fixed window)'],
  ['redis-gcra', 'this module, Redis, 1 policy (gcra)'],
  ['redis-token-bucket', 'this module, Redis, 1 policy (token bucket)'],
  ['redis-1', 'this module, Redis, 1 policy (sliding window counter)'],
  ['redis-3', 'this module, Redis, 3 policies of one identity (swc + token bucket + gcra)'],
  ['flexible-redis', 'rate-limiter-flexible RateLimiterRedis as a guard (auto-pipelining)'],
  ['throttler-memory', '@nestjs/throttler, memory storage'],
  ['throttler-redis', '@nestjs/throttler + @nest-lab/throttler-storage-redis'],
];
const only = process.env.BENCH_VARIANTS?.split(',');
const VARIANTS = ALL_VARIANTS.filter(([name]) => only === undefined || name === 'none' || only.includes(name));
const log = (message) => process.stdout.write(`[alloc] ${message}\n`);

/** One process of `variant`: its measurement, or the reason it does not count. */
async function measure(variant, redis) {
  // Optimized code allocates less than unoptimized code (escape analysis): with compilation on background threads,
  // when a function's optimized code is installed depends on timing, and the same variant measured 42.6 KB or 43.1
  // KB per request from one process to the next. Compiled on the main thread, it is installed at the same request.
  const flags = [
    `--max-semi-space-size=${SEMI_SPACE_MB}`,
    `--min-semi-space-size=${SEMI_SPACE_MB}`,
    '--expose-gc',
    '--no-concurrent-recompilation',
  ];
  const result = await nodeJson(
    [...flags, '--import', join(BENCH, 'peers.mjs'), join(BENCH, 'app.mjs'), variant, redis.url],
    { cwd: ROOT, env: { ...process.env, BENCH_ALLOC: `${REQUESTS},${WARM_UP},${IN_FLIGHT},${USERS}` }, what: variant },
  );
  const problems = [];
  if (result.collections.length > 0 || result.youngShrank) {
    const kinds = result.collections.map((c) => `${c.kind} ${fmt(c.ms, 2)} ms`).join(', ');
    problems.push(`a garbage collection ran in the measured part (${kinds || 'the young generation shrank'})`);
  }
  if (result.failed > 0) problems.push(`${result.failed} answers other than 200`);
  if (result.storeFailures > 0) problems.push(`${result.storeFailures} store failures`);
  return { ...result, problems };
}

/** Per variant: medians and spreads of the bytes per request, and of the added bytes (over the same repeat's none). */
function summarize(runs) {
  const m = {};
  for (const [name] of VARIANTS) {
    const bytes = runs.map((r) => r[name].bytesPerRequest);
    const added = runs.map((r) => r[name].bytesPerRequest - r.none.bytesPerRequest);
    const med = median(bytes);
    const [lo, hi] = spread(bytes);
    m[name] = {
      bytes: med,
      spreadPct: (100 * (hi - lo)) / med,
      added: median(bytes) - median(runs.map((r) => r.none.bytesPerRequest)),
      addedSpread: spread(added),
      arrayBuffers: median(runs.map((r) => r[name].arrayBufferBytesPerRequest)),
      youngLeftMb: Math.min(...runs.map((r) => r[name].youngLeft)) / 2 ** 20,
    };
  }
  return m;
}

/** Issue 43's allocation targets, each met or missed (a target whose variants did not run is left out). */
function targets(m) {
  const added = (name) => m[name]?.added ?? null;
  const rows = [];
  const ratio = (what, name, over, bound) => {
    if (added(name) === null || added(over) === null) return;
    const value = added(name) / added(over);
    rows.push({ what, value: fmt(value, 2) + '×', bound: `${bound}×`, met: value <= bound });
  };
  for (const name of ['redis-fixed-window', 'redis-gcra', 'redis-token-bucket', 'redis-1']) {
    ratio(`added bytes, \`${name}\` ≤ 0.5 × rate-limiter-flexible's guard`, name, 'flexible-redis', 0.5);
  }
  if (added('memory') !== null) {
    const kb = added('memory') / 1024;
    rows.push({
      what: 'added bytes, memory store 1 policy ≤ 2 KB',
      value: `${fmt(kb, 2)} KB`,
      bound: '2 KB',
      met: kb <= 2,
    });
  }
  ratio('added bytes, Redis 3 policies (`redis-3`) ≤ 1.3 × 1 policy (`redis-1`)', 'redis-3', 'redis-1', 1.3);
  ratio('added bytes, memory 3 policies (`memory-3`) ≤ 1.3 × 1 policy (`memory`)', 'memory-3', 'memory', 1.3);
  return rows;
}

function report(m, runs, loads) {
  const kb = (b) => fmt(b / 1024, 2);
  const table = VARIANTS.map(([name, what]) => {
    const x = m[name];
    const added = name === 'none' ? '—' : `${kb(x.added)} (${kb(x.addedSpread[0])}–${kb(x.addedSpread[1])})`;
    return `| \`${name}\`: ${what} | ${kb(x.bytes)} | ${fmt(x.spreadPct, 1)} % | ${added} | ${fmt(x.arrayBuffers, 0)} |`;
  });
  const goals = targets(m).map((t) => `| ${t.what} | ${t.value} | ${t.bound} | ${t.met ? 'met' : '**missed**'} |`);
  const problems = VARIANTS.flatMap(([name]) =>
    runs.flatMap((r, i) => r[name].problems.map((p) => `- \`${name}\` (process ${i + 1}): ${p}`)),
  );
  return `# Bytes allocated per request

Generated by \`npm run bench:alloc\` on ${new Date().toISOString()} (Node ${process.version}, ${os.availableParallelism()} cores,
load average ${loads[0]?.join(' / ')} before and ${loads[1]?.join(' / ')} after, over 1 / 5 / 15 minutes). Each variant is
the app of bench/app.mjs (Nest 12 + Express, one route) in ${REPEATS} processes of its own, interleaved: ${WARM_UP} warm-up
requests over ${USERS} users (\`x-user\`; every key exists afterwards), a full collection, then ${REQUESTS} measured requests
injected without sockets, ${IN_FLIGHT} in flight, each user once. The young generation is ${SEMI_SPACE_MB} MB
(\`--min-semi-space-size\`/\`--max-semi-space-size\`), more than the measured requests allocate, and a \`gc\`
PerformanceObserver checks that no collection ran while they did: the heap's growth (\`used_heap_size\`) is every byte
allocated, kept or garbage. Optimizing compilation runs on the main thread (\`--no-concurrent-recompilation\`), so
that optimized code, which allocates less, is installed at the same request in every process. This does not depend
on the machine's load. KB are 1,024 bytes; medians over the processes, the spread (max − min over the median) beside
them; *added* is the median minus the no-limiter app's, with the range of the per-process differences.
ArrayBuffer bytes (socket and Buffer memory outside the heap) are shown apart.

| variant | KB per request | spread | added KB per request | ArrayBuffer bytes per request |
| --- | ---: | ---: | ---: | ---: |
${table.join('\n')}

## Issue 43's allocation targets

| target | measured | bound | |
| --- | ---: | ---: | --- |
${goals.join('\n')}

${problems.length === 0 ? 'No collection ran in any measured part; every request was answered 200 and no store failure was reported.' : `**Problems** (these figures do not count):\n\n${problems.join('\n')}`}

Regenerate: \`npm run bench:alloc\` (\`BENCH_REPEATS\`, \`BENCH_REQUESTS\`, \`BENCH_VARIANTS\`, \`BENCH_SEMI_SPACE_MB\`).
`;
}

async function main() {
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) throw new Error('dist/ missing: run `npm run build` first');
  mkdirSync(OUT, { recursive: true });
  const loads = [loadAverage()];
  const redis = await startRedisServer();
  log(
    `${REPEATS} processes × ${VARIANTS.length} variants × ${REQUESTS} requests, ${SEMI_SPACE_MB} MB young generation`,
  );
  const runs = [];
  for (let repeat = 0; repeat < REPEATS; repeat++) {
    const results = {};
    for (const [name] of VARIANTS) {
      await flushAll(redis.port);
      results[name] = await measure(name, redis);
      const r = results[name];
      log(
        `process ${repeat + 1} ${name}: ${fmt(r.bytesPerRequest / 1024, 2)} KB/request${r.problems.map((p) => `; ${p}`).join('')}`,
      );
    }
    runs.push(results);
  }
  redis.stop();
  loads.push(loadAverage());
  const m = summarize(runs);
  const text = report(m, runs, loads);
  writeResults(join(OUT, 'RESULTS-alloc.md'), text);
  process.stdout.write(`\n${text}\n`);
  log(`wrote ${join(OUT, 'RESULTS-alloc.md')}${quick && process.env.BENCH_OUT === undefined ? ' (temporary)' : ''}`);
  if (runs.some((r) => Object.values(r).some((x) => x.problems.length > 0))) {
    throw new Error('some measurements do not count: see Problems above');
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  },
);
