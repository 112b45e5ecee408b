/**
 * The microservices context (`@nestjs/microservices`): `@MessagePattern` (request-response) and `@EventPattern`
 * handlers of controllers, on any transport (tested on TCP and Redis). Loaded by the adapter registry only when
 * the application has RPC handlers, and only then does its factory load `@nestjs/microservices`.
 *
 * What differs from HTTP: there is no client address and no conventional user (policies are keyed by key
 * functions, or by the module's `user` option when it reads RPC contexts), no headers, and two ways to stop a
 * message: a request-response message fails with an RpcException the client's observable receives; an event
 * has no one to answer, so it is dropped (not handled) and the drop is logged, at most once per policy per
 * minute.
 */
import type { ExecutionContext } from '@nestjs/common';
import type * as Microservices from '@nestjs/microservices';

import { importPeer } from '../util/optional-peer.js';
import type { RateLimitDecision } from '../policy/policy.types.js';
import {
  type AdapterFactory,
  type AdapterSettings,
  type ContextAdapter,
  type RateLimitDenial,
  RateLimitDroppedEvent,
  type RateLimitOverloaded,
  type RateLimitRefusal,
  type RateLimitUnavailable,
} from './context-adapter.js';
import { handlerLabel } from '../util/handler-label.js';
import { monotonicNow } from '../util/throttled-log.js';
import { DropLog } from './drop-log.js';
import type { RpcDenyListError, RpcOverloadedError, RpcRateLimitedError, RpcUnavailableError } from './rpc-errors.js';
import { checkNestMetadata, type MicroservicesPackage, rpcHandlerKind } from './rpc-handlers.js';

/** `Class.method` of the handler of `ctx`, for log lines. */
function handlerName(ctx: ExecutionContext): string {
  return handlerLabel(ctx.getClass(), ctx.getHandler());
}

/**
 * The adapter of the `'rpc'` context. Stateless apart from the drop log (per application: the factory makes
 * one per module instance) and the per-handler kind cache.
 */
export class RpcAdapter implements ContextAdapter {
  readonly type = 'rpc' as const;
  private readonly drops: DropLog;
  private readonly RpcException: MicroservicesPackage['RpcException'];

  /**
   * @param microservices what the adapter uses of `@nestjs/microservices` (the factory loads it).
   * @param now a monotonic clock in ms for the drop log's interval (a test may drive it); not the module's
   *   clock, which decides limits and may be a store's.
   */
  constructor(
    settings: Pick<AdapterSettings, 'logger'>,
    microservices: MicroservicesPackage,
    now: () => number = monotonicNow,
  ) {
    this.drops = new DropLog(settings.logger, now);
    this.RpcException = microservices.RpcException;
    const problem = checkNestMetadata(microservices);
    if (problem !== undefined) settings.logger.warn(`RPC rate limiting: ${problem}`);
  }

  /**
   * The handler's arguments array. Nest's RpcContextCreator builds the guards' and the interceptors'
   * ExecutionContext over the same `args` array (the rest parameters of one call of the handler's proxy), so
   * it is one object per message and handler, shared by guard and interceptor. Neither the data (it may be a
   * primitive) nor the transport's context (one TcpContext is shared by every event handler of a pattern) can
   * hold that state.
   */
  invocation(ctx: ExecutionContext): object {
    return ctx.getArgs<unknown[]>();
  }

  /** RPC transports have no client address the limiter could trust: 'ip' policies are refused at start. */
  clientIp(): string | undefined {
    return undefined;
  }

  /** No address either for lists: policies listing addresses are refused at start, the module's never match. */
  clientAddress(): string | undefined {
    return undefined;
  }

  /** No conventional user on a message: the module's `user` option or key functions must name one. */
  defaultUser(): string | undefined {
    return undefined;
  }

  /** RPC replies have no header fields. */
  setHeaders(): void {}

  /**
   * A message: RpcException whose error `{ status: 'error', code: 'RATE_LIMITED', message, policy, retryAfter? }`
   * reaches the client's observable as that object (Nest's RPC exception filter sends an object error as is).
   * An event: dropped (RateLimitDroppedEvent, which the module's filter turns into an empty result) and logged
   * at most once per policy per minute. A denial is a decision, not a store failure: nothing goes to onError.
   */
  deny(ctx: ExecutionContext, denial: RateLimitDenial, _decision: RateLimitDecision): never {
    if (rpcHandlerKind(ctx.getHandler()) === 'event') {
      this.drops.note(
        `limited:${denial.policy}`,
        () => `Dropped an event of ${handlerName(ctx)}: rate limit "${denial.policy}" exceeded`,
      );
      throw new RateLimitDroppedEvent(denial.policy);
    }
    const error: RpcRateLimitedError = { status: 'error', ...denial };
    throw new this.RpcException(error);
  }

  /**
   * A fail-closed policy whose store is down. A message fails with
   * `{ status: 'error', code: 'RATE_LIMIT_UNAVAILABLE', message, policy, retryAfter }`; an event is dropped and
   * logged like a denied one (the store failure itself went to onError through the engine).
   */
  unavailable(ctx: ExecutionContext, outage: RateLimitUnavailable): never {
    if (rpcHandlerKind(ctx.getHandler()) === 'event') {
      this.drops.note(
        `unavailable:${outage.policy}`,
        () =>
          `Dropped an event of ${handlerName(ctx)}: the rate limiter's store is unavailable and policy ` +
          `"${outage.policy}" fails closed`,
      );
      throw new RateLimitDroppedEvent(outage.policy);
    }
    const error: RpcUnavailableError = { status: 'error', ...outage };
    throw new this.RpcException(error);
  }

  /**
   * Load shedding refused the message: `{ status: 'error', code: 'OVERLOADED', message, criticality, retryAfter }`;
   * an event is dropped and logged like a denied one.
   */
  overloaded(ctx: ExecutionContext, overload: RateLimitOverloaded): never {
    if (rpcHandlerKind(ctx.getHandler()) === 'event') {
      this.drops.note(
        `overloaded:${overload.criticality}`,
        () => `Dropped an event of ${handlerName(ctx)}: the instance is overloaded (${overload.criticality})`,
      );
      throw new RateLimitDroppedEvent(undefined, `event dropped: overloaded (${overload.criticality})`);
    }
    const error: RpcOverloadedError = { status: 'error', ...overload };
    throw new this.RpcException(error);
  }

  /**
   * A deny list names the message: `{ status: 'error', code: 'RATE_LIMIT_DENY_LIST', message }`; an event is
   * dropped and logged like a denied one.
   */
  forbid(ctx: ExecutionContext, refusal: RateLimitRefusal): never {
    if (rpcHandlerKind(ctx.getHandler()) === 'event') {
      const list = refusal.policy === undefined ? 'the deny list' : `the deny list of policy "${refusal.policy}"`;
      this.drops.note(
        `deny-list:${refusal.policy ?? ''}`,
        () => `Dropped an event of ${handlerName(ctx)}: ${list} names it`,
      );
      throw new RateLimitDroppedEvent(refusal.policy, `event dropped: ${list}`);
    }
    const error: RpcDenyListError = { status: 'error', code: refusal.code, message: refusal.message };
    throw new this.RpcException(error);
  }
}

/** The factory the adapter registry imports (lib/contexts/index.ts). */
export const rpcAdapter: AdapterFactory = async (settings) =>
  new RpcAdapter(settings, await importPeer<typeof Microservices>('@nestjs/microservices'));
