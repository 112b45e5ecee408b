// The one route of the benchmarks' apps: GET /hello -> {"hello":"world"}.
import 'reflect-metadata';
import { Controller, Get } from '@nestjs/common';

class HelloController {
  hello() {
    return { hello: 'world' };
  }
}
Reflect.decorate(
  [Get('hello')],
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
);

export const Hello = Reflect.decorate([Controller()], HelloController);
