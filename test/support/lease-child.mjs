// One app instance of a fleet on the test's Redis, through the built package (dist/): an HTTP app whose route
// falls under one hot key (every request counts against the same tenant), for the leases' four-process test.
// argv: a Redis URL, the JSON of the route's policy, the number of requests to send itself in each round. Prints
// "ready"; at each line on stdin sends a round of requests (8 at a time) and prints the JSON of how many got 200
// and how many 429; exits when stdin ends.
import 'reflect-metadata';

import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

const [url, policyJson, count] = process.argv.slice(2);

class TenantController {
  work() {
    return 'done';
  }
}
Reflect.decorate(
  [Get('work'), RateLimit({ ...JSON.parse(policyJson), key: () => 'tenant' })],
  TenantController.prototype,
  'work',
  Object.getOwnPropertyDescriptor(TenantController.prototype, 'work'),
);
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot({ redis: { url }, timeout: 2000 })],
      controllers: [Reflect.decorate([Controller()], TenantController)],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, { logger: ['error'] });
await app.listen(0, '127.0.0.1');
const target = `http://127.0.0.1:${app.getHttpServer().address().port}/work`;
process.stdout.write('ready\n');
const round = async () => {
  const statuses = { 200: 0, 429: 0, other: 0 };
  let next = 0;
  const worker = async () => {
    while (next < Number(count)) {
      next += 1;
      const res = await fetch(target);
      await res.arrayBuffer();
      if (statuses[res.status] === undefined) statuses.other += 1;
      else statuses[res.status] += 1;
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  process.stdout.write(`${JSON.stringify(statuses)}\n`);
};
let rounds = Promise.resolve();
process.stdin.on('data', () => (rounds = rounds.then(round)));
process.stdin.on('end', () => rounds.then(() => app.close()));
