import { Controller, type ExecutionContext, type INestMicroservice, type ModuleMetadata } from '@nestjs/common';
import {
  ClientRedis,
  ClientTCP,
  EventPattern,
  MessagePattern,
  Payload,
  ServerRedis,
  ServerTCP,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom, lastValueFrom, timeout } from 'rxjs';

import { RATE_LIMIT_CLOCK, RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { FakeClock } from '../../lib/testing/index.js';
import { freePort } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { CapturingLogger } from '../support/log-lines.js';
import { alignedStart } from '../support/time.js';

export type TransportName = 'tcp' | 'redis';

/** What a message carries: the tenant keys every policy of the test controllers. */
export interface TenantMessage {
  tenant?: string;
  cost?: number;
}

/** Policies are keyed by the message's tenant (RPC contexts have no client address). */
export const tenantKey = (ctx: ExecutionContext): string | undefined => {
  const data = ctx.switchToRpc().getData<TenantMessage | undefined>();
  return typeof data?.tenant === 'string' ? `tenant:${data.tenant}` : undefined;
};

/** Message and event handlers with the policies the suites exercise; counts the calls that got through. */
@Controller()
export class RpcLimitedController {
  readonly handled: Record<string, number> = {};

  private count(pattern: string): void {
    this.handled[pattern] = (this.handled[pattern] ?? 0) + 1;
  }

  @MessagePattern('limited')
  @RateLimit({ name: 'per-tenant', algorithm: 'fixed-window', limit: 100, window: '1m', key: tenantKey })
  limited(@Payload() data: TenantMessage) {
    this.count('limited');
    return { ok: true, tenant: data.tenant };
  }

  @MessagePattern('pair')
  @RateLimit([
    { name: 'wide', algorithm: 'fixed-window', limit: 5, window: '1m', key: tenantKey },
    { name: 'narrow', algorithm: 'sliding-window-log', limit: 3, window: '1m', key: tenantKey },
  ])
  pair() {
    this.count('pair');
    return 'ok';
  }

  @MessagePattern('costly')
  @RateLimit({
    name: 'costly',
    algorithm: 'token-bucket',
    limit: 5,
    window: '1m',
    key: tenantKey,
    cost: (ctx) => ctx.switchToRpc().getData<TenantMessage>().cost ?? 1,
  })
  costly() {
    this.count('costly');
    return 'ok';
  }

  @MessagePattern('open')
  @RateLimit({ name: 'open', algorithm: 'fixed-window', limit: 1000, window: '1m', key: tenantKey, failMode: 'open' })
  open() {
    this.count('open');
    return 'open ok';
  }

  @MessagePattern('closed')
  @RateLimit({
    name: 'closed',
    algorithm: 'fixed-window',
    limit: 1000,
    window: '1m',
    key: tenantKey,
    failMode: 'closed',
  })
  closed() {
    this.count('closed');
    return 'closed ok';
  }

  @EventPattern('tick')
  @RateLimit({ name: 'ticks', algorithm: 'fixed-window', limit: 3, window: '1m', key: tenantKey })
  tick(@Payload() _data: TenantMessage) {
    this.count('tick');
  }

  @EventPattern('tick-open')
  @RateLimit({ name: 'ticks-open', algorithm: 'fixed-window', limit: 1000, window: '1m', key: tenantKey })
  tickOpen(@Payload() _data: TenantMessage) {
    this.count('tick-open');
  }

  @EventPattern('tick-closed')
  @RateLimit({
    name: 'ticks-closed',
    algorithm: 'fixed-window',
    limit: 1000,
    window: '1m',
    key: tenantKey,
    failMode: 'closed',
  })
  tickClosed(@Payload() _data: TenantMessage) {
    this.count('tick-closed');
  }
}

/** The clients and servers of the transports tested. */
export type RpcClient = ClientTCP | ClientRedis;
export type RpcServer = ServerTCP | ServerRedis;

/** A transport's server (ours, so the test can count what it finished processing) and a client to it. */
export interface TransportPair {
  readonly server: RpcServer;
  readonly client: RpcClient;
}

/** The server and client of a transport on loopback: TCP on a free port, or Redis pub/sub on `redisPort`. */
export async function transportPair(transport: TransportName, redisPort?: number): Promise<TransportPair> {
  if (transport === 'tcp') {
    const port = await freePort();
    return {
      server: new ServerTCP({ host: '127.0.0.1', port }),
      client: new ClientTCP({ host: '127.0.0.1', port }),
    };
  }
  if (redisPort === undefined) throw new Error('transportPair: the Redis transport needs the port of a redis-server');
  return {
    server: new ServerRedis({ host: '127.0.0.1', port: redisPort }),
    client: new ClientRedis({ host: '127.0.0.1', port: redisPort }),
  };
}

/** A standalone microservice (Test.createTestingModule → createNestMicroservice) and a connected client. */
export interface RpcApp {
  readonly app: INestMicroservice;
  readonly client: RpcClient;
  readonly clock: FakeClock;
  readonly logs: CapturingLogger;
  readonly controller: RpcLimitedController;
  /** Messages and events the server finished processing (handled, denied or dropped). */
  processed(): number;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly transport: TransportName;
  readonly options: RateLimitModuleOptions;
  /** The redis-server of the Redis transport. */
  readonly redisPort?: number;
  /** Default: RpcLimitedController. */
  readonly controllers?: NonNullable<ModuleMetadata['controllers']>;
}

/** Builds, initializes and starts a microservice; a start that fails releases what it opened, then rethrows. */
export async function startRpcApp({
  transport,
  options,
  redisPort,
  controllers = [RpcLimitedController],
}: StartOptions): Promise<RpcApp> {
  const clock = new FakeClock(alignedStart(60_000) + 60_000); // a minute's start: a denial's retryAfter is exactly 60
  const logs = new CapturingLogger();
  const { server, client } = await transportPair(transport, redisPort);
  let processed = 0;
  server.setOnProcessingEndHook(() => processed++);
  const moduleRef = await Test.createTestingModule({ imports: [RateLimitModule.forRoot(options)], controllers })
    .overrideProvider(RATE_LIMIT_CLOCK)
    .useValue(clock)
    .compile();
  const app = moduleRef.createNestMicroservice({ strategy: server, logger: logs });
  try {
    await app.listen();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  await client.connect();
  return {
    app,
    client,
    clock,
    logs,
    get controller() {
      return app.get(RpcLimitedController);
    },
    processed: () => processed,
    async close() {
      await client.close();
      await app.close();
    },
  };
}

/** One request-response message; rejects with what the server's error reached the client as. */
export const send = <T = unknown>(client: RpcClient, pattern: string, data: TenantMessage): Promise<T> =>
  firstValueFrom(client.send<T, TenantMessage>(pattern, data).pipe(timeout(5000)));

/** One event, written to the transport (not yet handled by the server). */
export const emit = (client: RpcClient, pattern: string, data: TenantMessage): Promise<unknown> =>
  lastValueFrom(client.emit<unknown, TenantMessage>(pattern, data).pipe(timeout(5000)), { defaultValue: undefined });

/** Sends every message at once; returns the answers and the errors the client received. */
export async function sendAll(
  client: RpcClient,
  pattern: string,
  messages: readonly TenantMessage[],
): Promise<{ answered: unknown[]; errors: unknown[] }> {
  const settled = await Promise.allSettled(messages.map((m) => send(client, pattern, m)));
  return {
    answered: settled.filter((s) => s.status === 'fulfilled').map((s) => s.value),
    errors: settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason as unknown),
  };
}

/** Waits (polling, bounded) until the server has finished processing `count` messages and events in all. */
export const untilProcessed = (rpc: Pick<RpcApp, 'processed'>, count: number): Promise<void> =>
  waitFor(async () => rpc.processed() >= count, `the server to process ${count} messages`, 10_000);
