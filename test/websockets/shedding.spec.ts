import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';

import { Criticality } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { waitFor } from '../support/wait.js';
import { ask, createWsApp, type Platform, type WsApp } from './ws-kit.js';

/** Messages of `slow` wait here until the test lets them go. */
const waiting: (() => void)[] = [];

@WebSocketGateway()
class WorkGateway {
  @SubscribeMessage('slow')
  @Criticality('critical')
  async slow(@MessageBody() data: unknown) {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return { event: 'slow', data };
  }

  @SubscribeMessage('cheap')
  @Criticality('sheddable')
  cheap(@MessageBody() data: unknown) {
    return { event: 'cheap', data };
  }
}

describe.each<Platform>(['socket.io', 'ws'])('load shedding of gateway messages (%s)', (platform) => {
  let ws: WsApp | undefined;
  afterEach(async () => {
    for (const go of waiting.splice(0)) go();
    await ws?.close();
    ws = undefined;
  });

  it('answers a shed message with the OVERLOADED exception, and handles it again once the limit has room', async () => {
    ws = await createWsApp(
      platform,
      { shedding: { minLimit: 1, maxLimit: 1, maxEventLoopDelay: 0 } },
      { gateways: [WorkGateway] },
    );
    const client = await ws.connect();
    client.send('slow', 1);
    await waitFor(() => waiting.length === 1);
    expect(await ask(client, 'cheap', 2)).toEqual({
      event: 'exception',
      data: {
        status: 'error',
        code: 'OVERLOADED',
        message: 'Service overloaded; sheddable requests are refused for now',
        criticality: 'sheddable',
        retryAfter: 1,
      },
    });
    for (const go of waiting.splice(0)) go();
    await client.waitFor(2);
    expect(client.received[1]).toEqual({ event: 'slow', data: 1 });
    const limiter = (ws as WsApp).app.get(RateLimiter);
    await waitFor(() => limiter.shedding?.shedder.inFlight === 0);
    expect(await ask(client, 'cheap', 3)).toEqual({ event: 'cheap', data: 3 });
    expect(client.isOpen()).toBe(true);
  });
});
