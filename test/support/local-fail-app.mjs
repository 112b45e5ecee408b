// One instance of an HTTP app on the built package (dist/) with failMode 'local' on the test's Redis (argv[2]):
// `instances: 2`, GET /api limited to 10 per minute per client address (so 5 per instance while Redis fails),
// GET /probe fail-closed (200 while Redis answers, 503 while it does not). Its clock stands still at the time the
// test gives on stdin, so that windows end when the test says: "time <ms>" answers "ok". Prints "ready <port>".
import 'reflect-metadata';
import { createInterface } from 'node:readline';

import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

let nowMs = 1_700_000_040_000;
Date.now = () => nowMs;

class ApiController {
  api() {
    return 'ok';
  }

  probe() {
    return 'ok';
  }
}
const decorate = (method, decorators) =>
  Reflect.decorate(
    decorators,
    ApiController.prototype,
    method,
    Object.getOwnPropertyDescriptor(ApiController.prototype, method),
  );
decorate('api', [
  Get('api'),
  RateLimit({ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m', key: 'ip' }),
]);
decorate('probe', [
  Get('probe'),
  RateLimit({ name: 'probe', algorithm: 'gcra', limit: 1_000_000, window: '1m', key: 'ip', failMode: 'closed' }),
]);
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot({ redis: { url: process.argv[2] }, failMode: 'local', instances: 2 })],
      controllers: [Reflect.decorate([Controller()], ApiController)],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
process.stdout.write(`ready ${app.getHttpServer().address().port}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg] = line.split(' ');
  if (command === 'time') {
    nowMs = Number(arg);
    process.stdout.write('ok\n');
  }
}
await app.close();
