import { Controller, type ExecutionContext } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { concat, type Observable, of, throwError } from 'rxjs';

import { RateLimit, type RateLimitPolicy, RateLimitService } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import {
  emit,
  type RpcApp,
  send,
  sendAll,
  startRpcApp,
  type TenantMessage,
  untilProcessed,
} from '../microservices/fixtures.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { accountOf, checkCredentials, type Credentials, LOGIN } from './fixtures.js';

const dataAccount = (ctx: ExecutionContext): string | undefined => accountOf(ctx.switchToRpc().getData<Credentials>());

/** Credentials as the fixtures' client helpers take a message. */
const message = (credentials: Credentials): Credentials & TenantMessage => credentials;

const RPC_LOGIN: RateLimitPolicy = { ...LOGIN, key: dataAccount };

/** What a failed check becomes for an RPC client. */
function rpcCheck(credentials: Credentials): { ok: true } {
  try {
    return checkCredentials(credentials);
  } catch (error) {
    throw new RpcException({ status: 'error', message: (error as Error).message });
  }
}

@Controller()
class RpcAuthController {
  /** The accounts of the events handled without an error. */
  readonly audited: string[] = [];

  /** A promise: rejects on a failed login. */
  @MessagePattern('login')
  @RateLimit(RPC_LOGIN)
  async login(@Payload() credentials: Credentials) {
    await Promise.resolve();
    return rpcCheck(credentials);
  }

  /** An Observable that answers once, then fails or completes: the outcome is how it ends. */
  @MessagePattern('login-stream')
  @RateLimit({ ...RPC_LOGIN, name: 'login-stream' })
  loginStream(@Payload() credentials: Credentials): Observable<string> {
    const end =
      credentials.password === 'right'
        ? of('done')
        : throwError(() => new RpcException({ status: 'error', message: 'bad credentials' }));
    return concat(of('checking'), end);
  }

  /** Events: a handler that throws is a failed event; 'succeeded' counts only the handled ones. */
  @EventPattern('audit')
  @RateLimit({ name: 'audit', algorithm: 'fixed-window', limit: 3, window: '1h', key: dataAccount, count: 'succeeded' })
  audit(@Payload() credentials: Credentials) {
    checkCredentials(credentials);
    this.audited.push(credentials.account as string);
  }
}

let accounts = 0;
const newAccount = (): string => `rpc${++accounts}`;

describe('counting by outcome in microservices (TCP transport, Redis store)', () => {
  let redis: TestRedis;
  let rpc: RpcApp;
  /** Store failures: each test here is exact only while the store answers, so none may happen. */
  const storeErrors: string[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    rpc = await startRpcApp({
      transport: 'tcp',
      // A generous timeout: 200 decisions at once on 2 shared cores must not fall into the fail mode here.
      options: {
        redis: { url: redis.url },
        timeout: 2000,
        onError: (error, policy) => storeErrors.push(`${policy}: ${error.message}`),
      },
      controllers: [RpcAuthController],
    });
  });
  afterEach(() => {
    expect(storeErrors.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await rpc.close();
    await redis.stop();
  });

  const remaining = async (policy: string, account: string): Promise<number> => {
    await rpc.app.get(RateLimiter).refundsSettled();
    return (await rpc.app.get(RateLimitService).peek(policy, `account:${account}`)).remaining;
  };
  /** Each message in turn: 'ok', 'failed' (the handler's error) or 'limited' (the limiter's denial). */
  const outcomes = async (pattern: string, account: string, passwords: string[]): Promise<string[]> => {
    const results: string[] = [];
    for (const password of passwords) {
      try {
        await send(rpc.client, pattern, message({ account, password }));
        results.push('ok');
      } catch (error) {
        results.push((error as { code?: string }).code === 'RATE_LIMITED' ? 'limited' : 'failed');
      }
    }
    return results;
  };

  it("'failed': 200 concurrent failed logins at 5 per account are charged exactly 5 times", async () => {
    const account = newAccount();
    const { answered, errors } = await sendAll(
      rpc.client,
      'login',
      Array.from({ length: 200 }, () => message({ account, password: 'wrong' })),
    );
    expect(answered).toEqual([]);
    const codes = errors.map(
      (e) => (e as { code?: string; message?: string }).code ?? (e as { message: string }).message,
    );
    const tally: Record<string, number> = {};
    for (const code of codes) tally[String(code)] = (tally[String(code)] ?? 0) + 1;
    expect(tally).toEqual({ RATE_LIMITED: 195, 'bad credentials': 5 });
    expect(await remaining('login', account)).toBe(0);
    expect(await outcomes('login', account, ['right'])).toEqual(['limited']);
  });

  it("'failed': a rejected promise counts, a resolved one is given back", async () => {
    const account = newAccount();
    expect(await outcomes('login', account, ['wrong', 'wrong', 'right', 'wrong', 'wrong'])).toEqual([
      'failed',
      'failed',
      'ok',
      'failed',
      'failed',
    ]);
    expect(await remaining('login', account)).toBe(1);
  });

  it("'failed': an Observable that fails after answering counts; one that completes is given back", async () => {
    const account = newAccount();
    // send() takes the first answer ('checking'); the outcome is how the stream ends.
    expect(await outcomes('login-stream', account, ['wrong', 'right', 'right'])).toEqual(['ok', 'ok', 'ok']);
    expect(await remaining('login-stream', account)).toBe(4);
  });

  it("'succeeded' on events: a handler that throws is given back, handled events count", async () => {
    const account = newAccount();
    // One at a time, each refund done before the next event: 2 handled events of 3, whatever the failures.
    for (const password of ['wrong', 'right', 'wrong', 'right', 'wrong']) {
      const before = rpc.processed();
      await emit(rpc.client, 'audit', message({ account, password }));
      await untilProcessed(rpc, before + 1);
      await rpc.app.get(RateLimiter).refundsSettled();
    }
    expect(await remaining('audit', account)).toBe(1);
    expect(rpc.app.get(RpcAuthController).audited).toEqual([account, account]);
  });
});
