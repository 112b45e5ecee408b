// An app on the built package (dist/) with the store named by argv[2] ('memory', 'redis' or 'postgres'):
// starts, answers one request, exits; prints the status, or the start-up error's message.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

const options = {
  memory: {},
  redis: { redis: { url: 'redis://127.0.0.1:1' } },
  postgres: { postgres: { connectionString: 'postgres://127.0.0.1:1/none' } },
}[process.argv[2]];

class HelloController {
  hello() {
    return 'hello';
  }
}
Reflect.decorate(
  [Get('hello'), RateLimit({ name: 'hello', algorithm: 'gcra', limit: 10, window: '1m', key: 'ip' })],
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
);
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot(options)],
      controllers: [Reflect.decorate([Controller()], HelloController)],
    }),
  ],
  AppModule,
);

try {
  const app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  const res = await fetch(`http://127.0.0.1:${app.getHttpServer().address().port}/hello`);
  process.stdout.write(`${res.status}\n`);
  await app.close();
} catch (error) {
  process.stdout.write(`${error.message}\n`);
}
