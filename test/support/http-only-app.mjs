// An HTTP-only app on the built package (dist/): one limited route, one request, then exit. Prints the status.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

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
      imports: [RateLimitModule.forRoot({})],
      controllers: [Reflect.decorate([Controller()], HelloController)],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
const res = await fetch(`http://127.0.0.1:${app.getHttpServer().address().port}/hello`);
process.stdout.write(`${res.status} ${res.headers.get('ratelimit')}\n`);
await app.close();
