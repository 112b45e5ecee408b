// One app instance of the history checker's fleet (test/fault/history.spec.ts), on the built package (dist/):
// a route per algorithm, every request on one key of each, failing closed. argv: the JSON of
// { redis: the module's redis option, lease: units or 0, policies: { route: policy } }. Prints "ready"; at "go"
// its workers send requests to every route in turn, each recorded with the time it was sent and answered; at
// "stop" it prints the JSON of { records: { route: [[from, to, status], ...] }, runs: [[began, ended], ...] }
// (`runs`: the concurrency route's handler runs) and exits.
import 'reflect-metadata';

import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

const { redis, lease, policies } = JSON.parse(process.argv[2]);
const WORKERS = 6;
const runs = [];

class FleetController {}
for (const [route, policy] of Object.entries(policies)) {
  const leased = lease > 0 && !['sliding-window-log', 'concurrency'].includes(policy.algorithm) ? { lease } : {};
  FleetController.prototype[route] =
    policy.algorithm === 'concurrency'
      ? async () => {
          const began = Date.now();
          await new Promise((resolve) => setTimeout(resolve, 15));
          runs.push([began, Date.now()]);
          return route;
        }
      : () => route;
  Reflect.decorate(
    [Get(route), RateLimit({ ...policy, ...leased, name: route, key: () => 'fleet', failMode: 'closed' })],
    FleetController.prototype,
    route,
    Object.getOwnPropertyDescriptor(FleetController.prototype, route),
  );
}
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot({ redis, timeout: 300 })],
      controllers: [Reflect.decorate([Controller()], FleetController)],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
const base = `http://127.0.0.1:${app.getHttpServer().address().port}/`;
const routes = Object.keys(policies);
const records = Object.fromEntries(routes.map((route) => [route, []]));
let running = false;
const worker = async (offset) => {
  for (let n = offset; running; n++) {
    const route = routes[n % routes.length];
    const from = Date.now();
    const res = await fetch(base + route);
    await res.arrayBuffer();
    records[route].push([from, Date.now(), res.status]);
  }
};
let workers = [];
process.stdout.write('ready\n');
process.stdin.on('data', async (chunk) => {
  const command = chunk.toString().trim();
  if (command === 'go') {
    running = true;
    workers = Array.from({ length: WORKERS }, (_, i) => worker(i));
  } else if (command === 'stop') {
    running = false;
    await Promise.all(workers);
    process.stdout.write(`${JSON.stringify({ records, runs })}\n`);
    await app.close();
    process.exit(0);
  }
});
