import { RateLimitService } from '../../lib/index.js';
import { gatewaySuite, redisSuite } from './gateway-suite.js';
import { POLICIES } from './gateways.js';
import { ask, createWsApp, type WsApp } from './ws-kit.js';

gatewaySuite('socket.io');
redisSuite('socket.io');

describe('socket.io handshakes', () => {
  let ws: WsApp | undefined;
  afterEach(async () => {
    await ws?.close();
    ws = undefined;
  });

  it.each([['polling'], ['websocket']] as const)(
    "'ip' keys read the handshake of the %s transport, for every message of the connection",
    async (transport) => {
      ws = await createWsApp('socket.io', { trustProxy: 'loopback' });
      const client = await ws.connect({ transports: [transport], headers: { 'x-forwarded-for': '203.0.113.9' } });
      for (let i = 0; i < 3; i++) expect((await ask(client, 'by-ip', i)).event).toBe('handled');
      const peek = (key: string) => ws!.app.get(RateLimitService).peek(POLICIES.byIp, key);
      expect((await peek('ip:203.0.113.9')).remaining).toBe(7);
      expect((await peek('ip:127.0.0.1')).remaining).toBe(10);
    },
  );
});
