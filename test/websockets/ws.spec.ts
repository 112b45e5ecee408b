import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';

import { RateLimit, RateLimitService } from '../../lib/index.js';
import { freePort } from '../support/redis-server.js';
import { CapturingLogger } from '../support/log-lines.js';
import { gatewaySuite, redisSuite } from './gateway-suite.js';
import { handled, POLICIES } from './gateways.js';
import { ask, connect, createWsApp, type WsApp } from './ws-kit.js';

gatewaySuite('ws');
redisSuite('ws');

/** A gateway on the app's port under a path of its own: ws's WebSocketServer shares the app's HTTP server. */
@WebSocketGateway({ path: '/chat' })
class PathGateway {
  @SubscribeMessage('by-ip')
  @RateLimit(POLICIES.byIp)
  byIp(@MessageBody() data: unknown) {
    return handled('by-ip', data);
  }
}

/** A gateway on a port of its own (loopback only): a WebSocketServer with an HTTP server the app never sees. */
function ownPortGateway(port: number) {
  @WebSocketGateway(port, { host: '127.0.0.1' })
  class OwnPortGateway {
    @SubscribeMessage('by-ip')
    @RateLimit(POLICIES.byIp)
    byIp(@MessageBody() data: unknown) {
      return handled('by-ip', data);
    }
  }
  return OwnPortGateway;
}

describe('ws handshakes', () => {
  let ws: WsApp | undefined;
  afterEach(async () => {
    await ws?.close();
    ws = undefined;
  });

  const remaining = async (key: string) => (await ws!.app.get(RateLimitService).peek(POLICIES.byIp, key)).remaining;

  it("a gateway with a path on the app's port: 'ip' keys read X-Forwarded-For of its upgrade request", async () => {
    ws = await createWsApp('ws', { trustProxy: 'loopback' }, { gateways: [PathGateway] });
    const client = await ws.connect({ path: '/chat', headers: { 'x-forwarded-for': '203.0.113.7' } });
    for (let i = 0; i < 2; i++) expect(await ask(client, 'by-ip', i)).toEqual(handled('by-ip', i));
    expect(await remaining('ip:203.0.113.7')).toBe(8);
    expect(await remaining('ip:127.0.0.1')).toBe(10);
  });

  it("a gateway on a port of its own: 'ip' keys use the socket address, with one warning about trustProxy", async () => {
    const log = new CapturingLogger();
    const port = await freePort();
    ws = await createWsApp('ws', { trustProxy: 'loopback' }, { gateways: [ownPortGateway(port)], logger: log });
    const clients = [];
    for (let c = 0; c < 2; c++) {
      const client = await connect('ws', port, { headers: { 'x-forwarded-for': '203.0.113.7' } });
      clients.push(client);
      expect(await ask(client, 'by-ip', c)).toEqual(handled('by-ip', c));
    }
    clients.forEach((client) => client.close());
    expect(await remaining('ip:127.0.0.1')).toBe(8);
    expect(await remaining('ip:203.0.113.7')).toBe(10);
    expect(log.warnings.filter((w) => w.includes('port of its own'))).toHaveLength(1);
  });

  it("with every gateway on its own port, an upgrade to the app's port is refused, not left open", async () => {
    ws = await createWsApp('ws', {}, { gateways: [ownPortGateway(await freePort())] });
    // Closed by the server ('socket hang up'), not left to the client's handshake timeout ('Opening handshake
    // has timed out', after 5 s).
    await expect(connect('ws', ws.port)).rejects.toThrow(/^ws client to port \d+: socket hang up$/);
  });
});
