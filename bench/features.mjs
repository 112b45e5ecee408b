// What each policy feature costs a request: `npm run bench:features` (or `node --import ./bench/peers.mjs
// bench/features.mjs` after `npm run build`). One process holds one Nest 12 + Express app per variant, all on
// the memory store (where the limiter's own work is all there is to see), and injects requests into each in
// turn without sockets: ROUNDS rounds of REQUESTS requests per app, 50 in flight, over 10,000 users, the order
// of the apps shuffled in every round. A round's figures are close in time, so what the machine does
// meanwhile weighs on every app alike: each variant is reported as the median, over the rounds, of its app CPU
// per request minus `memory`'s (1 policy) in the same round, with the spread. BENCH_BASELINE_DIST (an earlier
// build's dist/, relative to bench/, e.g. of 543b5fb, before these features) adds `memory@base`: the same
// 1-policy app on that build, so `memory` minus it is what the features cost a request that uses none of
// them. Writes bench/RESULTS-features.md (BENCH_OUT: elsewhere). Environment: BENCH_ROUNDS (default 15),
// BENCH_REQUESTS (default 4,000).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import inject from 'light-my-request';

import { Hello } from './hello.mjs';

const BENCH = fileURLToPath(new URL('.', import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const IN_FLIGHT = 50;
const USERS = 10_000;
const LIMIT = 1_000_000_000;

const byUser = (ctx) => `user:${ctx.switchToHttp().getRequest().headers['x-user']}`;
const perUser = { name: 'per-user', algorithm: 'sliding-window-counter', limit: LIMIT, window: '1m', key: byUser };

/** The variants: the module options of each (none of them ever denies here), and what it shows. */
const VARIANTS = {
  memory: ['1 policy', { defaults: [perUser] }],
  'memory-2': [
    '2 policies, enforced (what the shadow one is measured against)',
    { defaults: [perUser, { ...perUser, name: 'second' }] },
  ],
  'memory-shadow': [
    '2 policies, the second in shadow mode',
    { defaults: [perUser, { ...perUser, name: 'shadow', mode: 'shadow' }] },
  ],
  'memory-block': ['1 policy with a block (penalty) after a denial', { defaults: [{ ...perUser, block: '1m' }] }],
  'memory-lists': [
    '1 policy, module allow and deny lists that the client matches neither of',
    { defaults: [perUser], allow: ['10.0.0.0/8', '2001:db8::/32'], deny: ['192.0.2.0/24'] },
  ],
  'memory-plan': [
    '1 policy whose limit is a function of the request',
    { defaults: [{ ...perUser, limit: () => LIMIT }] },
  ],
  'memory-failed': [
    "1 policy counting failed requests only (count: 'failed')",
    { defaults: [{ ...perUser, count: 'failed' }] },
  ],
  'memory-concurrency': [
    '1 concurrency limit (a lease per request, given back when the response ends)',
    { defaults: [{ name: 'in-flight', algorithm: 'concurrency', limit: LIMIT, window: '1m', key: byUser }] },
  ],
  'memory-ondecision': ['1 policy and an onDecision hook', { defaults: [perUser], onDecision: () => undefined }],
};

/** One app with the module of `lib` (a build's exports) and `options`; returns its Express instance. */
async function appOf(lib, options) {
  const { MemoryRateLimitStore, RateLimitModule } = lib;
  class FeatureModule {}
  const AppModule = Reflect.decorate(
    [
      Module({
        imports: [RateLimitModule.forRoot({ store: new MemoryRateLimitStore(), timeout: 2000, ...options })],
        controllers: [Hello],
      }),
    ],
    FeatureModule,
  );
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  await app.init();
  const express = app.getHttpAdapter().getInstance();
  // light-my-request keeps every request it served when given the Express app itself (bench/inject.mjs)
  return (req, res) => express(req, res);
}

let offset = 0;
/** App CPU µs per request of `count` requests injected into `handler`, 50 in flight. */
async function cpuPerRequest(handler, count) {
  let next = 0;
  let failed = 0;
  const start = offset;
  offset += count;
  const lane = async () => {
    while (next < count) {
      const i = start + next++;
      const res = await inject(handler, { method: 'GET', url: '/hello', headers: { 'x-user': `u${i % USERS}` } });
      if (res.statusCode !== 200) failed++;
    }
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  const cpu = process.cpuUsage(before);
  if (failed > 0) throw new Error(`${failed} of ${count} requests were not answered 200`);
  return (cpu.user + cpu.system) / count;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (x) => x.toFixed(1);
const log = (message) => process.stdout.write(`[features] ${message}\n`);

const current = await import('../dist/index.js');
const apps = [];
for (const [name, [what, options]] of Object.entries(VARIANTS))
  apps.push({ name, what, handler: await appOf(current, options) });
const baseline = process.env.BENCH_BASELINE_DIST;
if (baseline !== undefined) {
  const lib = await import(new URL(`${baseline}/index.js`, import.meta.url).href);
  apps.push({
    name: 'memory@base',
    what: `1 policy, on the build in ${baseline}`,
    handler: await appOf(lib, VARIANTS.memory[1]),
  });
}
for (const app of apps) await cpuPerRequest(app.handler, REQUESTS); // warm-up
log(`${ROUNDS} rounds × ${apps.length} apps × ${REQUESTS} requests, ${IN_FLIGHT} in flight, one process`);
const byName = Object.fromEntries(apps.map((app) => [app.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = [...apps].sort(() => Math.random() - 0.5);
  for (const app of order) byName[app.name].push(await cpuPerRequest(app.handler, REQUESTS));
  log(`round ${round + 1}: ${apps.map((app) => `${app.name} ${fmt(byName[app.name][round])}`).join(', ')}`);
}
const rows = apps.map(({ name, what }) => {
  const over = byName[name].map((us, i) => us - byName.memory[i]);
  return `| \`${name}\`: ${what} | ${fmt(median(byName[name]))} | ${name === 'memory' ? '—' : `${fmt(median(over))} (${fmt(Math.min(...over))}–${fmt(Math.max(...over))})`} |`;
});
const table = ['| variant | app CPU µs/request | over `memory`, same round |', '| --- | ---: | ---: |', ...rows].join(
  '\n',
);
const report = `# What each policy feature costs a request

Generated by \`npm run bench:features\` on ${new Date().toISOString()} (${os.availableParallelism()} cores, Node ${process.version}):
one process, one Nest 12 + Express app per variant on the memory store, ${ROUNDS} rounds of ${REQUESTS} requests per
app injected without sockets (${IN_FLIGHT} in flight, ${USERS.toLocaleString('en')} users), the apps in a new order every round.
*Over \`memory\`* is the median over the rounds of the variant's app CPU per request minus the 1-policy app's in the
same round (spread: min–max): what the feature adds when it is used. ${baseline === undefined ? '' : `\`memory@base\` is the 1-policy app on an earlier build: minus it, \`memory\`'s own figure is what the features cost a request that uses none of them.`}
No variant ever denies (limits far above what is sent). The whole request is measured (Nest, Express,
light-my-request): 1 µs is about 1 % of it.

${table}
`;
writeFileSync(join(process.env.BENCH_OUT ?? BENCH, 'RESULTS-features.md'), report);
process.stdout.write(`\n${table}\n\n`);
process.exit(0);
