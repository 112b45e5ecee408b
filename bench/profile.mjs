// Where an app's CPU goes per request, by part: `npm run bench:profile` (or `node bench/profile.mjs` once
// `npm --prefix bench install` and `npm run build` ran). Each variant is the real Nest 12 + Express app of
// bench/app.mjs with requests injected as in bench/in-process.mjs; V8's sampling profiler (every 100 µs) runs
// over the measured requests only (BENCH_PROFILE). Self time is summed by part: this module's files (dist/,
// by folder and file, and its costliest functions), Nest, Express and the rest, in µs per request, beside the
// no-limiter app's. A profile says where the time goes; bench/in-process.mjs says how much a variant adds
// (interleaved rounds and spreads). Writes bench/RESULTS-profile.md (BENCH_OUT) with the machine's load.
//
// Environment: BENCH_ROUNDS (default 3: each variant's profiles of the rounds are summed), BENCH_REQUESTS
// (default 20,000), BENCH_VARIANTS (comma-separated; default none, memory, redis-fixed-window, redis-gcra).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { flushAll, startRedisServer } from './net.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const IN_FLIGHT = 50;
const USERS = 10_000;
const OUT = process.env.BENCH_OUT ?? join(BENCH, 'RESULTS-profile.md');
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'none,memory,redis-fixed-window,redis-gcra').split(',');
const TOP_FUNCTIONS = 12;

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
const dir = mkdtempSync(join(os.tmpdir(), 'nest-rate-limit-profile-'));

/** One measured run of `variant` under the profiler: the path of its profile. */
function profiled(variant, redisUrl, round) {
  const file = join(dir, `${variant}-${round}.cpuprofile`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', './bench/peers.mjs', 'bench/app.mjs', variant, redisUrl], {
      cwd: join(BENCH, '..'),
      env: { ...process.env, BENCH_INJECT: `${REQUESTS},${IN_FLIGHT},${USERS}`, BENCH_PROFILE: file },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) => {
      const result = JSON.parse(out.trim().split('\n').at(-1) || '{}');
      if (code !== 0 || result.failed !== 0) reject(new Error(`${variant}: exit ${code}, ${out}`));
      else resolve(file);
    });
  });
}

/** The part of the app a script belongs to, from its URL. */
function partOf(url) {
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) {
    const name = pkg[1];
    if (name.startsWith('@nestjs/')) return { part: 'Nest', file: name };
    if (['express', 'router', 'body-parser', 'send', 'finalhandler', 'etag', 'fresh'].includes(name)) {
      return { part: 'Express', file: name };
    }
    if (name === 'light-my-request') return { part: 'request injection (the harness)', file: name };
    return { part: 'other packages', file: name };
  }
  const dist = /\/dist\/(.+)$/.exec(url);
  if (dist) return { part: 'this module', file: dist[1] };
  if (url.startsWith('node:')) return { part: 'Node.js', file: url };
  if (url.includes('/bench/')) return { part: 'request injection (the harness)', file: url };
  return { part: 'V8 (GC, microtasks, native)', file: url || '(native)' };
}

/** Self time (µs) by part, by module file and by module function, summed over profiles. */
function selfTimes(files) {
  const byPart = new Map();
  const byFile = new Map();
  const byFunction = new Map();
  const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8'));
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    profile.samples.forEach((id, i) => {
      const { callFrame } = nodes.get(id);
      if (callFrame.functionName === '(idle)') return;
      const us = profile.timeDeltas[i] ?? 0;
      const { part, file: where } = partOf(callFrame.url);
      add(byPart, part, us);
      if (part === 'this module') {
        add(byFile, where, us);
        add(byFunction, `${callFrame.functionName || '(anonymous)'} (${where}:${callFrame.lineNumber + 1})`, us);
      }
    });
  }
  return { byPart, byFile, byFunction };
}

const redis = VARIANTS.some((v) => v.startsWith('redis')) ? await startRedisServer() : undefined;
const loadBefore = loadAverage();
const profiles = Object.fromEntries(VARIANTS.map((v) => [v, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of VARIANTS) {
    if (redis) await flushAll(redis.port);
    profiles[variant].push(await profiled(variant, redis?.url ?? '', round));
  }
}
const loadAfter = loadAverage();
redis?.stop();

const per = (us) => (us / (ROUNDS * REQUESTS)).toFixed(2);
const sum = (map) => [...map.values()].reduce((a, b) => a + b, 0);
const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
const times = Object.fromEntries(VARIANTS.map((v) => [v, selfTimes(profiles[v])]));
const parts = [...new Set(VARIANTS.flatMap((v) => [...times[v].byPart.keys()]))].sort();

const lines = [
  '# Where the CPU of a request goes',
  '',
  `Produced by \`npm run bench:profile\` on ${new Date().toISOString()}, ${os.cpus().length} cores, load average`,
  `${loadBefore.join(' / ')} before and ${loadAfter.join(' / ')} after (1 / 5 / 15 minutes). The Nest 12 + Express`,
  `app of the in-process benchmark, ${REQUESTS} requests injected ${IN_FLIGHT} at a time over ${USERS} users, ${ROUNDS} runs`,
  "per variant; V8's sampling profiler (100 µs) over the measured requests. Self time in µs per request: where the",
  'time goes, not a measurement of what a variant adds (that is `bench/RESULTS-in-process.md`, with spreads).',
  '',
  `| part | ${VARIANTS.join(' | ')} |`,
  `| --- | ${VARIANTS.map(() => '---:').join(' | ')} |`,
  ...parts.map((part) => `| ${part} | ${VARIANTS.map((v) => per(times[v].byPart.get(part) ?? 0)).join(' | ')} |`),
  `| **all** | ${VARIANTS.map((v) => `**${per(sum(times[v].byPart))}**`).join(' | ')} |`,
  '',
];
for (const variant of VARIANTS.filter((v) => v !== 'none')) {
  const { byFile, byFunction } = times[variant];
  lines.push(
    `## ${variant}: this module's ${per(sum(byFile))} µs per request`,
    '',
    '| file | µs per request |',
    '| --- | ---: |',
    ...sorted(byFile).map(([file, us]) => `| \`${file}\` | ${per(us)} |`),
    '',
    `Its costliest functions (self time):`,
    '',
    '| function | µs per request |',
    '| --- | ---: |',
    ...sorted(byFunction)
      .slice(0, TOP_FUNCTIONS)
      .map(([fn, us]) => `| \`${fn}\` | ${per(us)} |`),
    '',
  );
}
writeFileSync(OUT, `${lines.join('\n')}\n`);
process.stdout.write(`wrote ${OUT}\n`);
