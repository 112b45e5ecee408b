import { Controller, type ExecutionContext } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';

import { RateLimit, type RateLimitModuleOptions } from '../../lib/index.js';
import { emit, type RpcApp, send, startRpcApp, tenantKey, type TenantMessage, untilProcessed } from './fixtures.js';

const tenantOf = (ctx: ExecutionContext) => ctx.switchToRpc().getData<TenantMessage>().tenant;
const banned = async (ctx: ExecutionContext) => tenantOf(ctx) === 'banned';

@Controller()
class ListedRpcController {
  readonly handled: Record<string, number> = {};

  @MessagePattern('orders')
  @RateLimit({ name: 'orders', algorithm: 'fixed-window', limit: 1, window: '1m', key: tenantKey, deny: [banned] })
  orders(@Payload() data: TenantMessage) {
    this.handled.orders = (this.handled.orders ?? 0) + 1;
    return { ok: true, tenant: data.tenant };
  }

  @EventPattern('audit')
  @RateLimit({ name: 'audit', algorithm: 'fixed-window', limit: 100, window: '1m', key: tenantKey, deny: [banned] })
  audit(@Payload() _data: TenantMessage) {
    this.handled.audit = (this.handled.audit ?? 0) + 1;
  }
}

@Controller()
class AddressListedRpcController {
  @MessagePattern('by-address')
  @RateLimit({
    name: 'by-address',
    algorithm: 'fixed-window',
    limit: 5,
    window: '1m',
    key: tenantKey,
    allow: ['10.0.0.0/8'],
  })
  handle() {
    return 'never';
  }
}

describe('allow and deny lists of microservice handlers (TCP)', () => {
  let rpc: RpcApp | undefined;
  afterEach(async () => {
    await rpc?.close();
    rpc = undefined;
  });
  const start = async (options: RateLimitModuleOptions, controllers: (new () => object)[] = [ListedRpcController]) =>
    (rpc = await startRpcApp({ transport: 'tcp', options, controllers }));
  const handled = () => (rpc as RpcApp).app.get(ListedRpcController).handled;

  it('a denied message errors with { status, code: RATE_LIMIT_DENY_LIST, message } and is not handled', async () => {
    const { client } = await start({});
    await expect(send(client, 'orders', { tenant: 'banned' })).rejects.toStrictEqual({
      status: 'error',
      code: 'RATE_LIMIT_DENY_LIST',
      message: 'Denied by the deny list of policy "orders"',
    });
    await expect(send(client, 'orders', { tenant: 'acme' })).resolves.toEqual({ ok: true, tenant: 'acme' });
    expect(handled().orders).toBe(1);
  });

  it('a denied event is dropped (not handled) and logged once, as a drop, not as an error', async () => {
    const svc = await start({});
    for (let i = 0; i < 5; i++) await emit(svc.client, 'audit', { tenant: 'banned' });
    await emit(svc.client, 'audit', { tenant: 'acme' });
    await untilProcessed(svc, 6);
    expect(handled().audit).toBe(1);
    expect(svc.logs.find('warn', /Dropped an event/)).toEqual([
      {
        level: 'warn',
        message: 'Dropped an event of ListedRpcController.audit: the deny list of policy "audit" names it',
        context: 'RateLimit',
      },
    ]);
    expect(svc.logs.entries.filter((e) => e.level === 'error')).toEqual([]);
  });

  it("the module's allow list (a function of the message) skips the handler's policies", async () => {
    const { client } = await start({ allow: [(ctx) => tenantOf(ctx) === 'internal'] });
    for (let i = 0; i < 3; i++)
      await expect(send(client, 'orders', { tenant: 'internal' })).resolves.toMatchObject({ ok: true });
    await expect(send(client, 'orders', { tenant: 'acme' })).resolves.toMatchObject({ ok: true });
    await expect(send(client, 'orders', { tenant: 'acme' })).rejects.toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('addresses in a policy of a microservice handler stop the start (there is no client address)', async () => {
    await expect(start({}, [AddressListedRpcController])).rejects.toThrow(
      'Invalid rate-limit policy "by-address" (declared on AddressListedRpcController.handle), field "allow": lists client addresses on a microservice handler',
    );
  });

  it("addresses in the module's lists are warned about: there, only its functions can match", async () => {
    const svc = await start({ deny: ['192.0.2.0/24', banned] });
    expect(svc.logs.find('warn', /names client addresses, which microservice messages do not have/)).toHaveLength(1);
    await expect(send(svc.client, 'orders', { tenant: 'banned' })).rejects.toMatchObject({
      code: 'RATE_LIMIT_DENY_LIST',
      message: 'Denied by the deny list',
    });
    await expect(send(svc.client, 'orders', { tenant: 'acme' })).resolves.toMatchObject({ ok: true });
  });
});
