// One app process of the soak test: a Nest (Express) app on the built package (dist/), on the Redis at argv[2],
// with the store timeout of argv[3] ms.
// Prints its port, serves until killed, and exits with 1 on an unhandled rejection or exception.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { RateLimit, RateLimitModule } from '../../dist/index.js';

for (const event of ['unhandledRejection', 'uncaughtException']) {
  process.on(event, (error) => {
    process.stderr.write(`${event}: ${error?.stack ?? error}\n`);
    process.exit(1);
  });
}

const keyOf = (ctx) => ctx.switchToHttp().getRequest().headers['x-key'];

class SoakController {
  exact() {
    return 'ok';
  }
  mixed() {
    return 'ok';
  }
  memory() {
    global.gc?.();
    return { heapUsed: process.memoryUsage().heapUsed };
  }
}
const method = (name) => Object.getOwnPropertyDescriptor(SoakController.prototype, name);
Reflect.decorate(
  [
    Get('exact'),
    RateLimit({
      name: 'exact',
      algorithm: 'sliding-window-log',
      limit: 30,
      window: '1h',
      key: keyOf,
      failMode: 'closed',
    }),
  ],
  SoakController.prototype,
  'exact',
  method('exact'),
);
Reflect.decorate(
  [
    Get('mixed'),
    RateLimit([
      { name: 'mixed-gcra', algorithm: 'gcra', limit: 50, window: '1s', key: keyOf },
      {
        name: 'mixed-rows',
        algorithm: 'token-bucket',
        limit: 1000,
        window: '1s',
        key: keyOf,
        cost: (ctx) => Number(ctx.switchToHttp().getRequest().query.rows ?? 1),
      },
      { name: 'mixed-window', algorithm: 'sliding-window-counter', limit: 200, window: '10s', key: 'ip' },
    ]),
  ],
  SoakController.prototype,
  'mixed',
  method('mixed'),
);
Reflect.decorate([Get('memory')], SoakController.prototype, 'memory', method('memory'));
const Soak = Reflect.decorate([Controller()], SoakController);

class SoakModule {}
const AppModule = Reflect.decorate(
  [
    Module({
      imports: [
        RateLimitModule.forRoot({
          redis: { url: process.argv[2] },
          timeout: Number(process.argv[3]),
          defaults: [{ name: 'per-user', algorithm: 'fixed-window', limit: 100_000, window: '1m' }],
        }),
      ],
      controllers: [Soak],
    }),
  ],
  SoakModule,
);

const app = await NestFactory.create(AppModule, { logger: ['error'] });
await app.listen(0, '127.0.0.1');
process.stdout.write(`${app.getHttpServer().address().port}\n`);
