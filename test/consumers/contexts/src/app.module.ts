// The contexts consumer app: one source compiled by each test/consumers/contexts-nest* (Nest 10, 11 and 12),
// against the packed nest-rate-limit with the default options (the global guard, no @UseGuards anywhere; only
// an onDecision hook, which observes). Every context carries one policy of limit 3, so five calls give 3
// handled, 2 denied. The app keeps the tally itself (GET /tally): `ws` clients are told of no exception on
// Nest 10 and 11, so only the server can say what became of their messages.
import { Controller, type DynamicModule, Get, Module } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';
import { APP_GUARD } from '@nestjs/core';
import {
  RateLimit,
  type RateLimitDecisionEvent,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitPolicy,
  SkipRateLimit,
} from 'nest-rate-limit';

/** Per policy: the calls its handler ran, and those the limiter denied. */
const tally: Record<string, { handled: number; denied: number }> = {};
const entry = (policy: string) => (tally[policy] ??= { handled: 0, denied: 0 });
const handled = (policy: string): void => void entry(policy).handled++;

/** Three calls a minute, per client address (per caller for messages, which have none). */
const threePerMinute = (name: string): RateLimitPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit: 3,
  window: '1m',
  key: 'ip',
});

@Controller()
export class HttpController {
  @Get('hello')
  @RateLimit(threePerMinute('http'))
  hello(): { hello: string } {
    handled('http');
    return { hello: 'world' };
  }

  @Get('tally')
  @SkipRateLimit()
  tally(): typeof tally {
    return tally;
  }
}

@Resolver()
export class HelloResolver {
  @Query(() => String)
  @RateLimit(threePerMinute('gql'))
  hello(): string {
    handled('gql');
    return 'world';
  }
}

/** A handler that answers with an event, one that throws, and one that answers through the ack. */
@WebSocketGateway()
export class EchoGateway {
  @SubscribeMessage('returns')
  @RateLimit(threePerMinute('ws-returns'))
  returns(@MessageBody() n: number): { event: string; data: number } {
    handled('ws-returns');
    return { event: 'returned', data: n };
  }

  @SubscribeMessage('throws')
  @RateLimit(threePerMinute('ws-throws'))
  throws(): never {
    handled('ws-throws');
    throw new WsException('the handler failed');
  }

  /** Answered through the client's ack (socket.io: an answer without `event`; `ws`: a frame of it as it is). */
  @SubscribeMessage('acks')
  @RateLimit(threePerMinute('ws-acks'))
  acks(@MessageBody() n: number): { acked: number } {
    handled('ws-acks');
    return { acked: n };
  }
}

@Controller()
export class SumController {
  @MessagePattern('sum')
  @RateLimit({ ...threePerMinute('rpc'), key: () => 'caller' })
  sum(@Payload() terms: number[]): number {
    handled('rpc');
    return terms.reduce((a, b) => a + b, 0);
  }
}

/**
 * The app with a GraphQL module of the platform's driver (main.ts: Apollo on Express, Mercurius on Fastify).
 * `guard: 'app-guard'` is the other set-up of the docs: `global: false`, and RateLimitGuard as an APP_GUARD
 * of the app's (which Nest 10 and 11 do not apply to gateways: the start must stop, naming them).
 */
@Module({})
export class AppModule {
  static with(graphql: DynamicModule, guard: 'module' | 'app-guard'): DynamicModule {
    const onDecision = (event: RateLimitDecisionEvent): void => void (event.allowed || entry(event.policy).denied++);
    return {
      module: AppModule,
      imports: [RateLimitModule.forRoot({ onDecision, global: guard === 'module' }), graphql],
      controllers: [HttpController, SumController],
      providers: [
        HelloResolver,
        EchoGateway,
        ...(guard === 'app-guard' ? [{ provide: APP_GUARD, useClass: RateLimitGuard }] : []),
      ],
    };
  }
}
