// A Nest app as `tsc` compiles one to CommonJS (as Nest 10 and 11 apps are; it runs on this repository's Nest),
// with none of nest-rate-limit's optional peers installed: the memory store and one limited route.
// test/consumers/webpack-bundle.spec.ts bundles it with webpack (no externals) and runs the bundle, which prints
// the port it listens on.
/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS on purpose */
'use strict';
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { RateLimit, RateLimitModule } = require('nest-rate-limit');
const { stdout } = require('node:process');

class HelloController {
  hello() {
    return { hello: 'world' };
  }
}
Reflect.decorate(
  [Get('hello'), RateLimit({ name: 'hello', algorithm: 'gcra', limit: 2, window: '1m', key: 'ip' })],
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
);
class AppModule {}
Reflect.decorate(
  [
    Module({
      imports: [RateLimitModule.forRoot({ headers: 'ietf' })],
      controllers: [Reflect.decorate([Controller()], HelloController)],
    }),
  ],
  AppModule,
);

NestFactory.create(AppModule, { logger: ['error', 'warn'] }).then(async (app) => {
  await app.listen(0, '127.0.0.1');
  stdout.write(`listening on ${app.getHttpServer().address().port}\n`);
});
