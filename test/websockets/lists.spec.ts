import { RateLimitService } from '../../lib/index.js';
import { ChatGateway, handled, POLICIES } from './gateways.js';
import { ask, createWsApp, type Platform, type WsApp } from './ws-kit.js';

const PLATFORMS: Platform[] = ['socket.io', 'ws'];

describe.each(PLATFORMS)('allow and deny lists of gateways on %s', (platform) => {
  let ws: WsApp | undefined;
  afterEach(async () => {
    await ws?.close();
    ws = undefined;
  });
  const via = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });

  it("a denied message gets Nest's exception event with RATE_LIMIT_DENY_LIST; not handled; the connection stays open", async () => {
    ws = await createWsApp(platform, { trustProxy: 'loopback', deny: ['203.0.113.0/24', '2001:db8:d::/48'] });
    for (const ip of ['203.0.113.7', '2001:db8:d:1::1']) {
      const client = await ws.connect(via(ip));
      expect(await ask(client, 'pair', 1)).toStrictEqual({
        event: 'exception',
        data: { status: 'error', code: 'RATE_LIMIT_DENY_LIST', message: 'Denied by the deny list' },
      });
      expect(client.isOpen()).toBe(true);
    }
    expect(ws.app.get(ChatGateway).handled.get('pair')).toBeUndefined();
    const other = await ws.connect(via('203.0.114.7'));
    expect(await ask(other, 'pair', 2)).toEqual(handled('pair', 2));
  });

  it("an allowed client's messages skip every policy of the gateway: nothing consumed", async () => {
    ws = await createWsApp(platform, { trustProxy: 'loopback', allow: ['203.0.113.7', '2001:db8:a::1'] });
    const allowed = await ws.connect(via('203.0.113.7'));
    for (let i = 0; i < 5; i++) expect(await ask(allowed, 'pair', i)).toEqual(handled('pair', i));
    const peek = (key: string) => ws!.app.get(RateLimitService).peek(POLICIES.pairNarrow, key);
    expect((await peek('ip:203.0.113.7')).remaining).toBe(3);
    // The handshake's full address: another address of the allowed one's /64 is limited.
    const neighbour = await ws.connect(via('2001:db8:a::2'));
    for (let i = 0; i < 3; i++) expect((await ask(neighbour, 'pair', i)).event).toBe('handled');
    expect((await ask(neighbour, 'pair', 3)).event).toBe('exception');
    const listed = await ws.connect(via('2001:db8:a::1'));
    expect((await ask(listed, 'pair', 4)).event).toBe('handled');
  });
});
