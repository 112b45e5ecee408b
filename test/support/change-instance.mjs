// One more app instance on the test's Redis, through the built package (dist/): an HTTP app whose routes are
// limited per client IP, to see whether changes made through another instance reach its cache of denials.
// argv: a Redis URL, comma-separated Cluster ports, or pg:<schema> (the machine's PostgreSQL); the JSON of { route: policy }. Its real time (performance.now) stands still, so a
// cached denial never runs out of trust by itself here: only the feed of changes can lift it.
// Prints the HTTP port once listening.
import 'reflect-metadata';

import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cluster } from 'ioredis';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

const frozen = performance.now();
performance.now = () => frozen;

const [target, routes] = process.argv.slice(2);
const cluster = target.includes(',')
  ? new Cluster(target.split(',').map((port) => ({ host: '127.0.0.1', port: Number(port) })))
  : undefined;
const store = target.startsWith('pg:')
  ? { postgres: { connectionString: process.env.PG_URL, schema: target.slice(3), migrate: true } }
  : { redis: cluster === undefined ? { url: target } : { client: cluster } };

class LimitedController {}
for (const [route, policy] of Object.entries(JSON.parse(routes))) {
  LimitedController.prototype[route] = () => route;
  Reflect.decorate(
    [Get(route), RateLimit(policy)],
    LimitedController.prototype,
    route,
    Object.getOwnPropertyDescriptor(LimitedController.prototype, route),
  );
}
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot({ ...store, timeout: 2000 })], // a loaded machine: see the spec
      controllers: [Reflect.decorate([Controller()], LimitedController)],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
await app.listen(0, '127.0.0.1');
process.stdout.write(`${app.getHttpServer().address().port}\n`);
process.stdin.on('end', async () => {
  await app.close();
  cluster?.disconnect();
});
process.stdin.resume();
