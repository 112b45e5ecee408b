import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';

import { Criticality, RateLimit, RateLimitService } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { LimitedDependency } from '../support/limited-dependency.js';
import { waitFor } from '../support/wait.js';
import { emit, type RpcApp, send, startRpcApp, type TenantMessage, tenantKey, untilProcessed } from './fixtures.js';

const dependency = new LimitedDependency(2, 20);

@Controller()
class WorkHandlers {
  @MessagePattern('charge')
  @Criticality('critical')
  async charge() {
    await dependency.call('critical');
    return 'charged';
  }

  @MessagePattern('history')
  @Criticality('sheddable')
  @RateLimit({ name: 'history', algorithm: 'fixed-window', limit: 100_000, window: '1h', key: tenantKey })
  async history(@Payload() _data: TenantMessage) {
    await dependency.call('sheddable');
    return 'history';
  }

  @MessagePattern('login')
  @Criticality('sheddable')
  @RateLimit({ name: 'logins', algorithm: 'fixed-window', limit: 100, window: '1h', key: tenantKey, count: 'failed' })
  login(@Payload() _data: TenantMessage) {
    return 'in';
  }

  @EventPattern('audit')
  @Criticality('sheddable')
  async audit(@Payload() _data: TenantMessage) {
    await dependency.call('event');
  }
}

const CRITICAL_CLIENTS = 2;
const SHEDDABLE_CLIENTS = 12;
const ROUNDS = 10;

describe('load shedding of microservice messages (TCP)', () => {
  let rpc: RpcApp | undefined;
  afterEach(async () => {
    await rpc?.close();
    rpc = undefined;
    dependency.ahead.clear();
  });

  it('answers critical messages and refuses sheddable ones with OVERLOADED, their charge given back', async () => {
    rpc = await startRpcApp({
      transport: 'tcp',
      options: { shedding: { minLimit: 4, maxLimit: 8, initialLimit: 8, reserve: 0.5, maxEventLoopDelay: 0 } },
      controllers: [WorkHandlers],
    });
    const client = rpc.client;
    const critical: unknown[] = [];
    const answered: unknown[] = [];
    const refused: unknown[] = [];
    let done = false;
    const sheddable = async () => {
      while (!done) {
        await send(client, 'history', { tenant: 'acme' }).then(
          (answer) => answered.push(answer),
          (error: unknown) => refused.push(error),
        );
      }
    };
    const shedders = Array.from({ length: SHEDDABLE_CLIENTS }, sheddable);
    await Promise.all(
      Array.from({ length: CRITICAL_CLIENTS }, async () => {
        for (let i = 0; i < ROUNDS; i++) critical.push(await send(client, 'charge', {}));
      }),
    );
    done = true;
    await Promise.all(shedders);

    expect(critical).toEqual(Array.from({ length: CRITICAL_CLIENTS * ROUNDS }, () => 'charged'));
    expect(dependency.maxAhead('critical')).toBeLessThanOrEqual(3);
    expect(refused.length).toBeGreaterThan(0);
    for (const error of refused) {
      expect(error).toEqual({
        status: 'error',
        code: 'OVERLOADED',
        message: expect.stringContaining('overloaded'),
        criticality: 'sheddable',
        retryAfter: expect.any(Number),
      });
    }
    // Outside HTTP the guard charged them before the shedding interceptor refused them: given back.
    expect(dependency.calls('sheddable')).toBe(answered.length);
    const service = rpc.app.get(RateLimitService);
    await rpc.app.get(RateLimiter).refundsSettled();
    expect((await service.peek('history', 'tenant:acme')).remaining).toBe(100_000 - answered.length);
    expect(rpc.app.get(RateLimiter).shedding?.shedder.inFlight).toBe(0);
  });

  // Regression: the charge of a handler with `count` (or `settle`) policies was left to their watch, which took
  // the refusal for a failure: `count: 'failed'` kept it.
  it('gives back the charge of a counted policy when it refuses the message', async () => {
    rpc = await startRpcApp({
      transport: 'tcp',
      options: { shedding: { minLimit: 1, maxLimit: 1, initialLimit: 1, maxEventLoopDelay: 0 } },
      controllers: [WorkHandlers],
    });
    const held = send(rpc.client, 'charge', {});
    await waitFor(() => dependency.calls('critical') === 1);
    await expect(send(rpc.client, 'login', { tenant: 'acme' })).rejects.toMatchObject({ code: 'OVERLOADED' });
    expect(await held).toBe('charged');
    const limiter = rpc.app.get(RateLimiter);
    await limiter.refundsSettled();
    expect((await rpc.app.get(RateLimitService).peek('logins', 'tenant:acme')).remaining).toBe(100);
  });

  it('drops a sheddable event while the instance is overloaded, and logs it', async () => {
    rpc = await startRpcApp({
      transport: 'tcp',
      options: { shedding: { minLimit: 1, maxLimit: 1, initialLimit: 1, maxEventLoopDelay: 0 } },
      controllers: [WorkHandlers],
    });
    const held = send(rpc.client, 'charge', {});
    await emit(rpc.client, 'audit', {});
    await untilProcessed(rpc, 1);
    expect(await held).toBe('charged');
    await untilProcessed(rpc, 2);
    expect(dependency.calls('event')).toBe(0);
    expect(rpc.logs.lines.join('\n')).toContain('Dropped an event of WorkHandlers.audit: the instance is overloaded');
  });
});
