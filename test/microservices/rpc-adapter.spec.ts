import {
  type CallHandler,
  type CanActivate,
  Controller,
  type ExecutionContext,
  type INestMicroservice,
  Injectable,
  type NestInterceptor,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import * as microservices from '@nestjs/microservices';
import { EventPattern, MessagePattern, RpcException } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
// What users import: the class the adapter throws must be this one, or their `instanceof` checks fail.
import { RateLimitDroppedEvent } from 'nest-rate-limit/microservices';

import { DROP_LOG_INTERVAL_MS } from '../../lib/contexts/drop-log.js';
import { RpcAdapter } from '../../lib/contexts/rpc.adapter.js';
import {
  RPC_EVENT_HANDLER,
  RPC_HANDLER_TYPE_METADATA,
  RPC_MESSAGE_HANDLER,
  rpcHandlerKind,
} from '../../lib/contexts/rpc-handlers.js';
import type { RateLimitDecision } from '../../lib/index.js';
import { waitFor } from '../support/wait.js';
import { CapturingNestLogger } from '../support/log-lines.js';
import { emit, send, transportPair } from './fixtures.js';

class Handlers {
  @MessagePattern('message')
  message() {}

  @EventPattern('event')
  event(_data: unknown) {}

  plain() {}
}

/** The parts of an RPC ExecutionContext the adapter reads, for the handler `method` of Handlers. */
const contextOf = (method: 'message' | 'event', args: unknown[] = [{}, {}]): ExecutionContext =>
  ({
    getType: () => 'rpc',
    getClass: () => Handlers,
    getHandler: () => Handlers.prototype[method],
    getArgs: () => args,
  }) as unknown as ExecutionContext;

const decision: RateLimitDecision = {
  allowed: false,
  policy: 'p',
  limit: 1,
  remaining: 0,
  resetMs: 1000,
  retryAfterMs: 1000,
};

describe('the RPC adapter', () => {
  it("reads the metadata Nest's real @MessagePattern / @EventPattern write (a change in Nest fails here)", () => {
    expect(Reflect.getMetadata(RPC_HANDLER_TYPE_METADATA, Handlers.prototype.message)).toBe(RPC_MESSAGE_HANDLER);
    expect(Reflect.getMetadata(RPC_HANDLER_TYPE_METADATA, Handlers.prototype.event)).toBe(RPC_EVENT_HANDLER);
    expect(rpcHandlerKind(Handlers.prototype.message)).toBe('message');
    expect(rpcHandlerKind(Handlers.prototype.event)).toBe('event');
    expect(rpcHandlerKind(Handlers.prototype.plain)).toBe('message');
    // The adapter checks the same at start and says nothing when all is well.
    const logger = new CapturingNestLogger();
    new RpcAdapter({ logger }, microservices);
    expect(logger.warnings).toEqual([]);
  });

  it('has no client address, no default user, no headers', () => {
    const adapter = new RpcAdapter({ logger: new CapturingNestLogger() }, microservices);
    expect(adapter.type).toBe('rpc');
    expect(adapter.clientIp()).toBeUndefined();
    expect(adapter.defaultUser()).toBeUndefined();
    expect(adapter.setHeaders()).toBeUndefined();
  });

  it('denies a message with an RpcException carrying the exact error; an event with RateLimitDroppedEvent', () => {
    const adapter = new RpcAdapter({ logger: new CapturingNestLogger() }, microservices);
    const denial = { code: 'RATE_LIMITED', message: 'Rate limit "p" exceeded', policy: 'p' } as const;
    const thrown = (fn: () => never): unknown => {
      try {
        fn();
      } catch (error) {
        return error;
      }
      throw new Error('expected a throw');
    };
    const limited = thrown(() => adapter.deny(contextOf('message'), { ...denial, retryAfter: 3 }, decision));
    expect(limited).toBeInstanceOf(RpcException);
    expect((limited as RpcException).getError()).toStrictEqual({ status: 'error', ...denial, retryAfter: 3 });
    const never = thrown(() => adapter.deny(contextOf('message'), denial, decision));
    expect((never as RpcException).getError()).toStrictEqual({ status: 'error', ...denial });
    const outage = { code: 'RATE_LIMIT_UNAVAILABLE', message: 'down', policy: 'p', retryAfter: 1 } as const;
    const down = thrown(() => adapter.unavailable(contextOf('message'), outage));
    expect((down as RpcException).getError()).toStrictEqual({ status: 'error', ...outage });
    const dropped = thrown(() => adapter.deny(contextOf('event'), denial, decision));
    expect(dropped).toBeInstanceOf(RateLimitDroppedEvent);
    expect((dropped as RateLimitDroppedEvent).policy).toBe('p');
    expect(thrown(() => adapter.unavailable(contextOf('event'), outage))).toBeInstanceOf(RateLimitDroppedEvent);
  });

  it('logs dropped events at most once per policy and reason per minute, then how many went unlogged', () => {
    const logger = new CapturingNestLogger();
    let nowMs = 0;
    const adapter = new RpcAdapter({ logger }, microservices, () => nowMs);
    const drop = (policy: string) => {
      expect(() => adapter.deny(contextOf('event'), { code: 'RATE_LIMITED', message: 'm', policy }, decision)).toThrow(
        RateLimitDroppedEvent,
      );
    };
    for (let i = 0; i < 5; i++) drop('a');
    drop('b');
    expect(() =>
      adapter.unavailable(contextOf('event'), {
        code: 'RATE_LIMIT_UNAVAILABLE',
        message: 'm',
        policy: 'a',
        retryAfter: 1,
      }),
    ).toThrow(RateLimitDroppedEvent);
    expect(logger.warnings).toEqual([
      'Dropped an event of Handlers.event: rate limit "a" exceeded',
      'Dropped an event of Handlers.event: rate limit "b" exceeded',
      `Dropped an event of Handlers.event: the rate limiter's store is unavailable and policy "a" fails closed`,
    ]);
    nowMs += DROP_LOG_INTERVAL_MS - 1;
    drop('a');
    expect(logger.warnings).toHaveLength(3);
    nowMs += 1;
    drop('a');
    expect(logger.warnings.slice(3)).toEqual([
      'Dropped an event of Handlers.event: rate limit "a" exceeded (5 more dropped for the same reason since the last report, not logged)',
    ]);
  });

  describe("invocation() against Nest's RpcContextCreator, on a real TCP server", () => {
    const seen: { point: 'guard' | 'interceptor'; handler: string; invocation: object }[] = [];
    const record = (point: 'guard' | 'interceptor', ctx: ExecutionContext) =>
      seen.push({ point, handler: ctx.getHandler().name, invocation: adapter.invocation(ctx) });
    const of = (handler: string) => seen.filter((s) => s.handler === handler);
    const adapter = new RpcAdapter({ logger: new CapturingNestLogger() }, microservices);

    @Injectable()
    class RecordingGuard implements CanActivate {
      canActivate(ctx: ExecutionContext) {
        record('guard', ctx);
        return true;
      }
    }
    @Injectable()
    class RecordingInterceptor implements NestInterceptor {
      intercept(ctx: ExecutionContext, next: CallHandler) {
        record('interceptor', ctx);
        return next.handle();
      }
    }
    @Controller()
    @UseGuards(RecordingGuard)
    @UseInterceptors(RecordingInterceptor)
    class Recorded {
      @MessagePattern('echo')
      echo(data: unknown) {
        return data;
      }
      @EventPattern('noted')
      first(_data: unknown) {}
      @EventPattern('noted')
      second(_data: unknown) {}
    }

    let app: INestMicroservice;
    const pair = transportPair('tcp');
    beforeAll(async () => {
      const { server, client } = await pair;
      let processed = 0;
      server.setOnProcessingEndHook(() => processed++);
      const moduleRef = await Test.createTestingModule({ controllers: [Recorded] }).compile();
      app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
      await app.listen();
      await client.connect();
      await send(client, 'echo', { tenant: 'a' });
      await send(client, 'echo', { tenant: 'a' });
      await emit(client, 'noted', { tenant: 'a' });
      await waitFor(async () => processed >= 3, 'the server to process 3 messages', 5000);
    });
    afterAll(async () => {
      await (await pair).client.close();
      await app.close();
    });

    it('is one object per message, the same for its guard and interceptor, another for the next message', () => {
      expect(of('echo').map((s) => s.point)).toEqual(['guard', 'interceptor', 'guard', 'interceptor']);
      const [g1, i1, g2, i2] = of('echo').map((s) => s.invocation);
      expect(i1).toBe(g1);
      expect(i2).toBe(g2);
      expect(g2).not.toBe(g1);
    });

    it('is one object per handler when two event handlers share a pattern (each decides its own policies)', () => {
      expect(of('first').map((s) => s.point)).toEqual(['guard', 'interceptor']);
      expect(of('second').map((s) => s.point)).toEqual(['guard', 'interceptor']);
      const [g3, i3] = of('first').map((s) => s.invocation);
      const [g4, i4] = of('second').map((s) => s.invocation);
      expect(i3).toBe(g3);
      expect(i4).toBe(g4);
      expect(g4).not.toBe(g3);
    });
  });
});
