import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';

// Regression: errors named the handler by its function's name, so a method wrapped by another decorator
// (whose wrapper has no name) was reported as "declared on WidgetController." — the method name missing.

/** A decorator that wraps the method in a function without a name, as some third-party decorators do. */
const Wrapped =
  (): MethodDecorator =>
  <T>(_target: object, _key: string | symbol, descriptor: TypedPropertyDescriptor<T>) => {
    const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
    const wrapper = function (this: unknown, ...args: unknown[]): unknown {
      return original.apply(this, args);
    };
    Object.defineProperty(wrapper, 'name', { value: '' });
    descriptor.value = wrapper as unknown as T;
    return descriptor;
  };

@Controller('widgets')
class WidgetController {
  @Get()
  @RateLimit({ name: 'w', algorithm: 'fixed-window', limit: 0, window: '1m', key: 'ip' })
  @Wrapped()
  create() {
    return 'never';
  }
}

/** A key function that returns a number: a policy error reported at request time, naming where it was declared. */
@Controller('gadgets')
class GadgetController {
  @Get()
  @RateLimit({ name: 'g', algorithm: 'fixed-window', limit: 5, window: '1m', key: () => 42 as unknown as string })
  @Wrapped()
  list() {
    return 'ok';
  }
}

describe.each(ADAPTERS)('errors name Controller.method for anonymous handlers on %s', (adapter) => {
  it('the handler is wrapped in a function without a name', () => {
    expect(WidgetController.prototype.create.name).toBe('');
    expect(GadgetController.prototype.list.name).toBe('');
  });

  it('a bad policy stops the start with an error naming WidgetController.create', async () => {
    await expect(
      createApp(adapter, { imports: [RateLimitModule.forRoot({})], controllers: [WidgetController] }),
    ).rejects.toThrow(
      'Invalid rate-limit policy "w" (declared on WidgetController.create), field "limit": must be an integer >= 1 or a function of the request, got 0',
    );
  });

  it('a policy error at request time names GadgetController.list', async () => {
    const errors: string[] = [];
    let app: INestApplication | undefined;
    try {
      ({ app } = await createApp(adapter, {
        imports: [RateLimitModule.forRoot({ onError: (error) => errors.push(error.message) })],
        controllers: [GadgetController],
      }));
      const res = await request(app.getHttpServer()).get('/gadgets');
      expect(res.status).toBe(200); // fail open
      expect(errors).toEqual([
        'Invalid rate-limit policy "g" (declared on GadgetController.list), field "key": ' +
          'key function returned number; it must return a string or undefined',
      ]);
    } finally {
      await app?.close();
    }
  });
});
