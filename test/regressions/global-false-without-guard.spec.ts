import {
  Controller,
  Get,
  type INestApplication,
  Injectable,
  type ModuleMetadata,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { MessagePattern } from '@nestjs/microservices';
import { Query, Resolver } from '@nestjs/graphql';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';

import {
  RateLimit,
  RateLimitGuard,
  RateLimitInterceptor,
  RateLimitModule,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { statusesOf } from '../support/nest-app.js';

// Regression: with `global: false`, a @RateLimit on a controller that no RateLimitGuard covers was never
// enforced: the app started and answered 200, 200, 200 … for ever, with no log.

const ONE_PER_MINUTE: RateLimitPolicy = {
  name: 'one-per-minute',
  algorithm: 'fixed-window',
  limit: 1,
  window: 60_000,
  key: 'ip',
};

@Controller('open')
class UnguardedController {
  @Get()
  @RateLimit(ONE_PER_MINUTE)
  get() {
    return 'ok';
  }
}

@Controller('guarded')
@UseGuards(RateLimitGuard)
class GuardedController {
  @Get()
  @RateLimit(ONE_PER_MINUTE)
  get() {
    return 'ok';
  }
}

/** A guard of the application's own, built on the module's. */
@Injectable()
class AppRateLimitGuard extends RateLimitGuard {}

@Controller('subclass')
class SubclassGuardController {
  @Get()
  @UseGuards(AppRateLimitGuard)
  @RateLimit(ONE_PER_MINUTE)
  get() {
    return 'ok';
  }
}

@Controller('intercepted')
@UseInterceptors(RateLimitInterceptor)
class InterceptedController {
  @Get()
  @RateLimit(ONE_PER_MINUTE)
  get() {
    return 'ok';
  }
}

@Controller('service-only')
class ServiceOnlyController {
  @Get()
  @RateLimit({ name: 'ai-tokens', algorithm: 'fixed-window', limit: 1000, window: '1h', cost: 0 })
  get() {
    return 'ok';
  }
}

@Resolver()
class UnguardedResolver {
  @Query(() => String)
  @RateLimit(ONE_PER_MINUTE)
  hello() {
    return 'hello';
  }
}

@WebSocketGateway()
class UnguardedGateway {
  @SubscribeMessage('ping')
  @RateLimit(ONE_PER_MINUTE)
  ping() {
    return 'pong';
  }
}

@Controller()
class UnguardedMessages {
  @MessagePattern('sum')
  @RateLimit({ ...ONE_PER_MINUTE, key: () => 'all' })
  sum() {
    return 3;
  }
}

/** An Express app of `metadata` with RateLimitModule({ global: false }); `configure` runs before init. */
async function start(
  metadata: ModuleMetadata,
  configure: (app: INestApplication) => void = () => undefined,
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    ...metadata,
    imports: [RateLimitModule.forRoot({ global: false }), ...(metadata.imports ?? [])],
  }).compile();
  const app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
  configure(app);
  try {
    await app.init();
  } catch (error) {
    await app.close();
    throw error;
  }
  return app;
}

describe('regression: global: false without a guard switches every limit off', () => {
  it('stops the start, naming Class.method and the two ways out', async () => {
    const started = start({ controllers: [UnguardedController] });
    await expect(started).rejects.toThrow(/UnguardedController\.get/);
    await expect(start({ controllers: [UnguardedController] })).rejects.toThrow(
      /@UseGuards\(RateLimitGuard\).*`global: true`/,
    );
  });

  it('names every uncovered handler, in every context: route, resolver, gateway message, message pattern', async () => {
    const started = start({
      controllers: [UnguardedController, UnguardedMessages],
      providers: [UnguardedResolver, UnguardedGateway],
    });
    await expect(started).rejects.toThrow(
      /UnguardedController\.get.*UnguardedMessages\.sum.*UnguardedResolver\.hello.*UnguardedGateway\.ping/,
    );
  });

  it.each([
    ['@UseGuards(RateLimitGuard) on the class', GuardedController, '/guarded'],
    ['@UseGuards of a subclass of RateLimitGuard on the handler', SubclassGuardController, '/subclass'],
    ['@UseInterceptors(RateLimitInterceptor) on the class', InterceptedController, '/intercepted'],
  ])('starts and enforces with %s', async (_, controller, path) => {
    const app = await start({ controllers: [controller], providers: [AppRateLimitGuard] });
    try {
      expect(await statusesOf(app, path, 2)).toEqual([200, 429]);
    } finally {
      await app.close();
    }
  });

  it('starts and enforces with RateLimitGuard as an APP_GUARD of the application', async () => {
    const app = await start({
      controllers: [UnguardedController],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    });
    try {
      expect(await statusesOf(app, '/open', 2)).toEqual([200, 429]);
    } finally {
      await app.close();
    }
  });

  it('starts and enforces with app.useGlobalGuards(RateLimitGuard)', async () => {
    const app = await start({ controllers: [UnguardedController] }, (a) => a.useGlobalGuards(a.get(RateLimitGuard)));
    try {
      expect(await statusesOf(app, '/open', 2)).toEqual([200, 429]);
    } finally {
      await app.close();
    }
  });

  it('leaves alone a handler whose policies only RateLimitService charges (cost: 0)', async () => {
    const app = await start({ controllers: [ServiceOnlyController] });
    try {
      expect(await statusesOf(app, '/service-only', 2)).toEqual([200, 200]);
    } finally {
      await app.close();
    }
  });
});
