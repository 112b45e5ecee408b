// Added app CPU per request, paired: `npm run bench:paired` (or `node --import ./bench/peers.mjs
// bench/paired-cpu.mjs [--quick]` once `npm run build` and `npm --prefix bench install` ran). Unlike
// bench/in-process.mjs (a process per variant and round), ONE process holds a Nest 12 + Express app of every
// variant (bench/variants.mjs) and of the no-limiter baseline, and alternates batches of BATCH injected requests
// between each variant and the baseline: a pair is a baseline batch and a variant batch run back to back (their
// order alternating), each timed with process.cpuUsage(). What a variant adds per request is the median of its
// pairs' differences, with the interquartile range: slow drifts of the machine's load fall on both halves of a
// pair. A full collection (gc()) runs untimed before each batch, so a batch pays for collecting its own garbage and
// not for the one before. redis-server is a process of its own (its CPU is not counted). Writes
// bench/RESULTS-paired.md (with --quick: a temporary folder unless BENCH_OUT is set).
//
// Environment: BENCH_ROUNDS (default 30, quick 3), BENCH_BATCH (requests per batch, default 500, quick 200),
// BENCH_IN_FLIGHT (default 50), BENCH_VARIANTS (comma-separated), BENCH_OUT.
import 'reflect-metadata';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { Hello } from './hello.mjs';
import { injectBatch } from './inject.mjs';
import { flushAll, startRedisServer } from './net.mjs';
import { fmt, loadAverage, median, writeResults } from './stats.mjs';
import { variantsOn } from './variants.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const quick = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (quick ? 3 : 30));
const BATCH = Number(process.env.BENCH_BATCH ?? (quick ? 200 : 500));
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 50);
const USERS = 10_000;
const WARM_UP = quick ? 1000 : 5000;
const SETTLE_MS = 30;
const OUT = process.env.BENCH_OUT ?? (quick ? mkdtempSync(join(os.tmpdir(), 'nest-rate-limit-paired-')) : BENCH);

const ALL_VARIANTS = [
  ['memory', 'this module, memory store, 1 policy (sliding window counter)'],
  ['memory-3', 'this module, memory store, 3 policies of one identity'],
  ['redis-fixed-window', 'this module, Redis, 1 policy (fixed window)'],
  ['redis-gcra', 'this module, Redis, 1 policy (gcra)'],
  ['redis-token-bucket', 'this module, Redis, 1 policy (token bucket)'],
  ['redis-1', 'this module, Redis, 1 policy (sliding window counter)'],
  ['redis-3', 'this module, Redis, 3 policies of one identity'],
  ['flexible-redis', 'rate-limiter-flexible RateLimiterRedis as a guard (auto-pipelining)'],
  ['throttler-memory', '@nestjs/throttler, memory storage'],
  ['throttler-redis', '@nestjs/throttler + @nest-lab/throttler-storage-redis'],
];
const only = process.env.BENCH_VARIANTS?.split(',');
const VARIANTS = ALL_VARIANTS.filter(([name]) => only === undefined || only.includes(name));
const log = (message) => process.stdout.write(`[paired] ${message}\n`);
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  return s[Math.floor(at)] + (s[Math.ceil(at)] - s[Math.floor(at)]) * (at - Math.floor(at));
};

let storeFailures = 0;

/** A Nest app of `name`, initialized, as a request handler with its own running request count. */
async function appOf(name, variants) {
  class BenchModule {}
  const AppModule = Reflect.decorate([Module({ ...variants[name](), controllers: [Hello] })], BenchModule);
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.init();
  const express = app.getHttpAdapter().getInstance();
  return { name, app, handler: (req, res) => express(req, res), sent: 0, failed: 0 };
}

/**
 * `count` requests into `target` after an untimed full collection and a pause for V8's background threads to
 * finish its sweeping (process.cpuUsage() counts every thread); resolves to its CPU µs per request.
 */
async function batch(target, count = BATCH) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const before = process.cpuUsage();
  target.failed += await injectBatch(target.handler, {
    count,
    offset: target.sent,
    inFlight: IN_FLIGHT,
    users: USERS,
  });
  const cpu = process.cpuUsage(before);
  target.sent += count;
  return (cpu.user + cpu.system) / count;
}

function report(apps, diffs, baseline, loads) {
  const added = (name) => median(diffs[name]);
  const flexible = diffs['flexible-redis'] === undefined ? null : added('flexible-redis');
  const rows = VARIANTS.map(([name, what]) => {
    const d = diffs[name];
    const ratio = name.startsWith('redis') && flexible ? fmt(added(name) / flexible, 2) : '—';
    return `| \`${name}\`: ${what} | ${fmt(added(name))} | ${fmt(quantile(d, 0.25))}–${fmt(quantile(d, 0.75))} | ${ratio} |`;
  });
  const problems = apps.filter((a) => a.failed > 0).map((a) => `- \`${a.name}\`: ${a.failed} answers other than 200`);
  if (storeFailures > 0) problems.push(`- ${storeFailures} store failures`);
  return `# Added app CPU per request, paired batches in one process

Generated by \`npm run bench:paired\` on ${new Date().toISOString()} (Node ${process.version}, ${os.availableParallelism()} cores;
load average ${loads[0]?.join(' / ')} before and ${loads[1]?.join(' / ')} after, over 1 / 5 / 15 minutes). One process holds
the app of every variant and of the no-limiter baseline (Nest 12 + Express, bench/variants.mjs); ${ROUNDS} rounds, in each
every variant is paired with the baseline: ${BATCH} requests injected into each (light-my-request, ${IN_FLIGHT} in flight,
over ${USERS.toLocaleString('en')} users), back to back, the order alternating, each batch's CPU from process.cpuUsage() after
an untimed full collection (after ${WARM_UP} warm-up requests per app). *Added* is the median over the ${ROUNDS} pairs of (variant − baseline) CPU µs per request,
with the interquartile range; the baseline itself took ${fmt(baseline)} µs per request (median). CPU time moves with the
machine's load: regenerate on a quiet machine (load average well under 1 on these cores) before reading the figures.

| variant | added app CPU µs per request | interquartile range | × rate-limiter-flexible |
| --- | ---: | ---: | ---: |
${rows.join('\n')}

${problems.length === 0 ? 'Every request was answered 200 and no store failure was reported.' : `Problems:\n\n${problems.join('\n')}`}

Regenerate: \`npm run bench:paired\` (\`BENCH_ROUNDS\`, \`BENCH_BATCH\`, \`BENCH_VARIANTS\`).
`;
}

async function main() {
  if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc (npm run bench:paired does)');
  if (!existsSync(join(BENCH, '..', 'dist', 'index.js'))) throw new Error('dist/ missing: run `npm run build`');
  mkdirSync(OUT, { recursive: true });
  const loads = [loadAverage()];
  const redis = await startRedisServer();
  const variants = variantsOn(redis.url, () => storeFailures++);
  const none = await appOf('none', variants);
  const apps = [none];
  for (const [name] of VARIANTS) apps.push(await appOf(name, variants));
  log(`${ROUNDS} rounds × ${VARIANTS.length} pairs × ${BATCH} requests, ${IN_FLIGHT} in flight`);
  for (const target of apps) await batch(target, WARM_UP); // every app's code compiled before the first pair
  const diffs = Object.fromEntries(VARIANTS.map(([name]) => [name, []]));
  const baseline = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, target] of apps.slice(1).entries()) {
      const noneFirst = (round + i) % 2 === 0;
      const first = await batch(noneFirst ? none : target);
      const second = await batch(noneFirst ? target : none);
      const [base, cost] = noneFirst ? [first, second] : [second, first];
      baseline.push(base);
      diffs[target.name].push(cost - base);
    }
    log(`round ${round + 1}: ${VARIANTS.map(([name]) => `${name} ${fmt(diffs[name].at(-1))}`).join(', ')}`);
  }
  for (const { app } of apps) await app.close();
  await flushAll(redis.port);
  redis.stop();
  loads.push(loadAverage());
  const text = report(apps, diffs, median(baseline), loads);
  writeResults(join(OUT, 'RESULTS-paired.md'), text);
  process.stdout.write(`\n${text}\n`);
  log(`wrote ${join(OUT, 'RESULTS-paired.md')}${quick && process.env.BENCH_OUT === undefined ? ' (temporary)' : ''}`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  },
);
