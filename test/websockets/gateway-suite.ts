import type { ExecutionContext } from '@nestjs/common';

import { RateLimitService, type RateLimitModuleOptions } from '../../lib/index.js';
import { RateLimitStoreTimeoutError } from '../../lib/stores/store-timeout.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { CapturingLogger } from '../support/log-lines.js';
import {
  BadGateway,
  ChatGateway,
  GUARDED_POLICIES,
  GuardedGateway,
  AuthenticatingGateway,
  handled,
  InterceptedGateway,
  messageUser,
  ONCE_POLICY,
  PlainGateway,
  POLICIES,
} from './gateways.js';
import { ask, createWsApp, denied, type Platform, unavailable, type WsApp } from './ws-kit.js';

/** Bound of the flood test: 4 connections × 50 messages, all answered within this. */
const FLOOD_TIMEOUT_MS = 10_000;

const remaining = async (ws: WsApp, policy: keyof typeof POLICIES, key: string): Promise<number> =>
  (await ws.app.get(RateLimitService).peek(POLICIES[policy], key)).remaining;

/** 200 messages sent at once over 4 connections at limit 100: exactly 100 handled, 100 denied exactly. */
async function expectExactAdmission(ws: WsApp): Promise<void> {
  const clients = await Promise.all(Array.from({ length: 4 }, () => ws.connect()));
  for (let i = 0; i < 50; i++) for (const client of clients) client.send('flood', i);
  const answers = (await Promise.all(clients.map((c) => c.waitFor(50, FLOOD_TIMEOUT_MS)))).flat();
  const exceptions = answers.filter((m) => m.event === 'exception');
  expect(answers.filter((m) => m.event === 'handled')).toHaveLength(100);
  expect(exceptions).toHaveLength(100);
  for (const { data } of exceptions) expect(data).toStrictEqual(denied('flood', 60));
  expect(ws.app.get(ChatGateway).handled.get('flood')).toBe(100);
  expect(await remaining(ws, 'flood', 'ip:127.0.0.1')).toBe(0);
  expect(clients.every((c) => c.isOpen())).toBe(true);
}

/** The tests every platform passes, on the memory store. */
export function gatewaySuite(platform: Platform): void {
  describe(`gateways on ${platform}, memory store`, () => {
    let ws: WsApp | undefined;
    afterEach(async () => {
      await ws?.close();
      ws = undefined;
    });

    it('admits exactly 100 of 200 messages sent at once at limit 100; the other 100 get the denial', async () => {
      ws = await createWsApp(platform, {});
      await expectExactAdmission(ws);
    });

    it('a denied message is not handled: the exact denial as `exception`; the connection stays open', async () => {
      ws = await createWsApp(platform, {});
      const client = await ws.connect();
      for (let i = 0; i < 3; i++) expect(await ask(client, 'pair', i)).toEqual(handled('pair', i));
      expect(await ask(client, 'pair', 3)).toStrictEqual({ event: 'exception', data: denied('pair-narrow', 60) });
      expect(ws.app.get(ChatGateway).handled.get('pair')).toBe(3);
      expect(client.isOpen()).toBe(true);
      // Another handler of the same connection is still served at once, and this one after its window.
      expect(await ask(client, 'by-ip', 'x')).toEqual(handled('by-ip', 'x'));
      ws.clock.advance(60_000);
      expect(await ask(client, 'pair', 4)).toEqual(handled('pair', 4));
      expect(ws.app.get(ChatGateway).handled.get('pair')).toBe(4);
    });

    it('all-or-nothing: a message denied by one of two policies consumes neither (read back with peek)', async () => {
      ws = await createWsApp(platform, {});
      const client = await ws.connect();
      for (let i = 0; i < 3; i++) expect((await ask(client, 'pair', i)).event).toBe('handled');
      for (let i = 0; i < 4; i++) expect((await ask(client, 'pair', i)).event).toBe('exception');
      // pair-narrow (3) denied the last four; pair-wide (5) would be at 0 had they consumed it.
      expect(await remaining(ws, 'pairNarrow', 'ip:127.0.0.1')).toBe(0);
      expect(await remaining(ws, 'pairWide', 'ip:127.0.0.1')).toBe(2);
    });

    it('the global guard (APP_GUARD) applies to gateways: defaults limit a gateway with no decorator', async () => {
      const perUser = { name: 'per-user', algorithm: 'fixed-window', limit: 2, window: '1m' } as const;
      ws = await createWsApp(platform, { defaults: [perUser] }, { gateways: [PlainGateway] });
      const client = await ws.connect();
      expect(await ask(client, 'plain', 1)).toEqual(handled('plain', 1));
      expect(await ask(client, 'plain', 2)).toEqual(handled('plain', 2));
      expect(await ask(client, 'plain', 3)).toStrictEqual({ event: 'exception', data: denied('per-user', 60) });
      expect(client.isOpen()).toBe(true);
    });

    it("'ip' keys read X-Forwarded-For of the handshake from trusted proxies only", async () => {
      ws = await createWsApp(platform, { trustProxy: 'loopback' });
      const proxied = await ws.connect({ headers: { 'x-forwarded-for': '203.0.113.7' } });
      const forged = await ws.connect({ headers: { 'x-forwarded-for': '198.51.100.9, 192.0.2.44' } });
      const direct = await ws.connect();
      for (let i = 0; i < 2; i++) expect((await ask(proxied, 'by-ip', i)).event).toBe('handled');
      expect((await ask(forged, 'by-ip')).event).toBe('handled');
      expect((await ask(direct, 'by-ip')).event).toBe('handled');
      expect(await remaining(ws, 'byIp', 'ip:203.0.113.7')).toBe(8);
      // The loopback proxy is believed; 192.0.2.44 is not a proxy, so what it claims (198.51.100.9) is not.
      expect(await remaining(ws, 'byIp', 'ip:192.0.2.44')).toBe(9);
      expect(await remaining(ws, 'byIp', 'ip:198.51.100.9')).toBe(10);
      expect(await remaining(ws, 'byIp', 'ip:127.0.0.1')).toBe(9);
    });

    it("'ip' keys ignore X-Forwarded-For with trustProxy off, and say so once", async () => {
      const log = new CapturingLogger();
      ws = await createWsApp(platform, {}, { logger: log });
      for (let c = 0; c < 2; c++) {
        const client = await ws.connect({ headers: { 'x-forwarded-for': '203.0.113.7' } });
        expect((await ask(client, 'by-ip')).event).toBe('handled');
      }
      expect(await remaining(ws, 'byIp', 'ip:127.0.0.1')).toBe(8);
      expect(await remaining(ws, 'byIp', 'ip:203.0.113.7')).toBe(10);
      expect(log.warnings.filter((w) => w.includes('X-Forwarded-For') && w.includes('WebSocket'))).toHaveLength(1);
    });

    const userOption = (ctx: ExecutionContext): string | undefined => {
      if (ctx.getType() !== 'ws') return undefined;
      const client = ctx.switchToWs().getClient<{ data?: { user?: { id?: string } }; user?: { id?: string } }>();
      return platform === 'socket.io' ? client.data?.user?.id : client.user?.id;
    };
    it.each<[string, RateLimitModuleOptions]>([
      ['the user option', { user: userOption }],
      ['the default (client.data.user or client.user)', {}],
    ])('a user attached at connection keys user policies, read by %s', async (_how, options) => {
      ws = await createWsApp(platform, options);
      const [alice1, alice2, bob, anonymous] = await Promise.all([
        ws.connect({ user: 'alice' }),
        ws.connect({ user: 'alice' }),
        ws.connect({ user: 'bob' }),
        ws.connect(),
      ]);
      expect((await ask(alice1, 'by-user', 1)).event).toBe('handled');
      expect((await ask(alice2, 'by-user', 2)).event).toBe('handled');
      // One budget per user across connections; other users and the anonymous IP have their own.
      expect(await ask(alice1, 'by-user', 3)).toStrictEqual({ event: 'exception', data: denied('by-user', 60) });
      expect((await ask(bob, 'by-user', 4)).event).toBe('handled');
      expect((await ask(anonymous, 'by-user', 5)).event).toBe('handled');
      expect(await remaining(ws, 'byUser', 'user:alice')).toBe(0);
      expect(await remaining(ws, 'byUser', 'user:bob')).toBe(1);
      expect(await remaining(ws, 'byUser', 'ip:127.0.0.1')).toBe(1);
    });

    it('global: false, RateLimitGuard after a per-message auth guard: user policies key by that user', async () => {
      ws = await createWsApp(platform, { global: false, user: messageUser }, { gateways: [GuardedGateway] });
      const client = await ws.connect();
      const peek = async (policy: keyof typeof GUARDED_POLICIES, key: string) =>
        (await ws!.app.get(RateLimitService).peek(GUARDED_POLICIES[policy], key)).remaining;
      for (let n = 0; n < 2; n++) {
        expect(await ask(client, 'guarded', { token: 'alice', n })).toEqual(handled('guarded', n));
      }
      expect(await ask(client, 'guarded', { token: 'alice', n: 2 })).toStrictEqual({
        event: 'exception',
        data: denied('guarded-user', 60),
      });
      expect(await ask(client, 'guarded', { token: 'bob', n: 3 })).toEqual(handled('guarded', 3));
      expect(ws.app.get(GuardedGateway).handled).toBe(3);
      expect(await peek('user', 'user:alice')).toBe(0);
      expect(await peek('user', 'user:bob')).toBe(1);
      // All-or-nothing: the denied message consumed no 'ip' unit either (3 handled of 4).
      expect(await peek('ip', 'ip:127.0.0.1')).toBe(7);
    });

    it("the global guard and a gateway's own auth guard: user policies wait for it and key by its user", async () => {
      ws = await createWsApp(platform, { user: messageUser }, { gateways: [AuthenticatingGateway] });
      const client = await ws.connect();
      const peek = async (policy: keyof typeof GUARDED_POLICIES, key: string) =>
        (await ws!.app.get(RateLimitService).peek(GUARDED_POLICIES[policy], key)).remaining;
      for (let n = 0; n < 2; n++) {
        expect(await ask(client, 'authenticated', { token: 'alice', n })).toEqual(handled('authenticated', n));
      }
      expect(await ask(client, 'authenticated', { token: 'alice', n: 2 })).toStrictEqual({
        event: 'exception',
        data: denied('guarded-user', 60),
      });
      expect(ws.app.get(AuthenticatingGateway).handled).toBe(2);
      expect(await peek('user', 'user:alice')).toBe(0);
      // Nothing went to the IP's user-keyed fallback; the IP policy was decided before authentication
      // and given back when the user's policy denied.
      expect(await peek('user', 'ip:127.0.0.1')).toBe(2);
      expect(await peek('ip', 'ip:127.0.0.1')).toBe(8);
    });

    it('a message is decided once when the global guard and RateLimitInterceptor both ask', async () => {
      ws = await createWsApp(platform, {}, { gateways: [InterceptedGateway] });
      const client = await ws.connect();
      for (let i = 0; i < 3; i++) expect(await ask(client, 'once', i)).toEqual(handled('once', i));
      expect(await ask(client, 'once', 3)).toStrictEqual({ event: 'exception', data: denied('once', 60) });
      const peek = await ws.app.get(RateLimitService).peek(ONCE_POLICY, 'ip:127.0.0.1');
      expect(peek.remaining).toBe(0);
    });

    it('a bad policy on a gateway handler stops the start, naming Gateway.method', async () => {
      await expect(createWsApp(platform, {}, { gateways: [BadGateway] })).rejects.toThrow(
        /BadGateway\.flood[\s\S]*"limit"|"limit"[\s\S]*BadGateway\.flood/,
      );
    });
  });
}

/** The tests every platform passes on a real redis-server (one per test: the outage test kills it). */
export function redisSuite(platform: Platform): void {
  describe(`gateways on ${platform}, Redis`, () => {
    let redis: TestRedis;
    let ws: WsApp | undefined;
    beforeEach(async () => {
      redis = await startRedis();
    });
    afterEach(async () => {
      await ws?.close();
      ws = undefined;
      await redis.stop();
    });

    it('admits exactly 100 of 200 messages sent at once at limit 100; the other 100 get the denial', async () => {
      // a store timeout of 2 s: a loaded machine's first calls must not be decided by the fail mode
      ws = await createWsApp(platform, { redis: { url: redis.url }, timeout: 2000 });
      await expectExactAdmission(ws);
    });

    it('Redis killed: fail open handles, fail closed answers RATE_LIMIT_UNAVAILABLE, nothing waits; restarted: decided again', async () => {
      const failures: string[] = [];
      const reasons: unknown[] = [];
      ws = await createWsApp(platform, {
        redis: { url: redis.url },
        timeout: 100,
        onError: (error, policy) => {
          failures.push(policy);
          reasons.push(error);
        },
      });
      const client = await ws.connect();
      expect(await ask(client, 'closed', 'before')).toEqual(handled('closed', 'before'));
      redis.process.kill('SIGKILL');
      await new Promise((resolve) => redis.process.once('exit', resolve));
      for (let i = 0; i < 5; i++) {
        expect(await ask(client, 'open', i)).toEqual(handled('open', i));
        expect(await ask(client, 'closed', i)).toStrictEqual({ event: 'exception', data: unavailable('closed', 1) });
      }
      expect(client.isOpen()).toBe(true);
      expect(ws.app.get(ChatGateway).handled.get('closed')).toBe(1);
      expect(ws.app.get(ChatGateway).handled.get('open')).toBe(5);
      expect(failures).toEqual(expect.arrayContaining(['open', 'closed']));
      // Nothing waited for Redis: every call failed at once (the connection refused, then the open breaker),
      // none by its timeout (counted, not timed: a loaded machine slows the round trip, not this).
      expect(reasons.filter((error) => error instanceof RateLimitStoreTimeoutError)).toEqual([]);

      // The same connection is decided again once Redis is back (empty: it had no persistence).
      const port = redis.port;
      await redis.stop();
      redis = await startRedis({ port });
      await waitFor(async () => (await ask(client, 'closed', 'probe')).event === 'handled', 'Redis decisions', 8000);
      expect(await remaining(ws, 'closed', 'ip:127.0.0.1')).toBeLessThan(1000);
    });
  });
}
