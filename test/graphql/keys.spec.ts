import type { TrustProxy } from '../../lib/nest/rate-limit.options.js';
import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';
import { GuardedResolver, KeysResolver, TokenGuard } from './fixtures.js';

const code = async (t: GraphQLTestApp, query: string, headers: Record<string, string> = {}) => {
  const res = await t.gql(query, { headers });
  return res.errors?.[0]?.extensions?.code ?? (Object.values(res.data ?? {})[0] === 'ok' ? 'ok' : 'unexpected');
};

describe.each(GRAPHQL_DRIVERS)("'ip' and 'user' keys of GraphQL operations on %s", (driver) => {
  let t: GraphQLTestApp;
  const start = async (trustProxy?: TrustProxy) => {
    t = await startGraphQLApp(driver, {
      resolvers: [KeysResolver, GuardedResolver, TokenGuard],
      rateLimit: { trustProxy },
      authenticate: true,
    });
  };
  afterEach(() => t.close());

  it('with trustProxy, keys by the client the trusted proxy reports', async () => {
    await start('loopback');
    const via = (client: string) => ({ 'X-Forwarded-For': client });
    expect(await code(t, '{ whoami }', via('203.0.113.7'))).toBe('ok');
    expect(await code(t, '{ whoami }', via('203.0.113.7'))).toBe('RATE_LIMITED');
    expect(await code(t, '{ whoami }', via('203.0.113.8'))).toBe('ok');
    // Only the loopback proxy is believed: the entry it appended is the client, whatever the client claimed.
    expect(await code(t, '{ whoami }', via('10.0.0.1, 203.0.113.9'))).toBe('ok');
    expect(await code(t, '{ whoami }', via('10.0.0.2, 203.0.113.9'))).toBe('RATE_LIMITED');
    expect(await code(t, '{ whoami }', via('2001:db8:1:2::1'))).toBe('ok');
    expect(await code(t, '{ whoami }', via('2001:db8:1:2::ffff'))).toBe('RATE_LIMITED');
    const service = t.service();
    for (const ip of ['203.0.113.7', '203.0.113.8', '203.0.113.9', '2001:db8:1:2::/64']) {
      expect([ip, (await service.peek('by-ip', `ip:${ip}`)).remaining]).toEqual([ip, 0]);
    }
    expect((await service.peek('by-ip', 'ip:127.0.0.1')).remaining).toBe(1);
  });

  it('without trustProxy, X-Forwarded-For is ignored: every client is the socket address', async () => {
    await start();
    expect(await code(t, '{ whoami }', { 'X-Forwarded-For': '203.0.113.7' })).toBe('ok');
    expect(await code(t, '{ whoami }', { 'X-Forwarded-For': '203.0.113.8' })).toBe('RATE_LIMITED');
    expect((await t.service().peek('by-ip', 'ip:127.0.0.1')).remaining).toBe(0);
  });

  it("'user' keys by req.user.id (or .sub) of the operation's request, else by the IP", async () => {
    await start();
    expect(await code(t, '{ mine }', { 'X-User': 'alice' })).toBe('ok');
    expect(await code(t, '{ mine }', { 'X-User': 'alice' })).toBe('RATE_LIMITED');
    expect(await code(t, '{ mine }', { 'X-User': 'bob' })).toBe('ok');
    expect(await code(t, '{ mine }', { 'X-Sub': 'carol' })).toBe('ok');
    expect(await code(t, '{ mine }', { 'X-Sub': 'carol' })).toBe('RATE_LIMITED');
    expect(await code(t, '{ mine }')).toBe('ok');
    expect(await code(t, '{ mine }')).toBe('RATE_LIMITED');
    const service = t.service();
    for (const key of ['user:alice', 'user:bob', 'user:carol', 'ip:127.0.0.1']) {
      expect([key, (await service.peek('by-user', key)).remaining]).toEqual([key, 0]);
    }
  });

  it("'user' keys by the user a resolver guard authenticates, after the limiter's global guard", async () => {
    await start();
    expect(await code(t, '{ guarded }', { 'X-Token': 'tok-1' })).toBe('ok');
    expect(await code(t, '{ guarded }', { 'X-Token': 'tok-1' })).toBe('RATE_LIMITED');
    expect(await code(t, '{ guarded }', { 'X-Token': 'tok-2' })).toBe('ok');
    const service = t.service();
    expect((await service.peek('guarded', 'user:tok-1')).remaining).toBe(0);
    expect((await service.peek('guarded', 'user:tok-2')).remaining).toBe(0);
    // Never charged to the IP the global guard saw before authentication.
    expect((await service.peek('guarded', 'ip:127.0.0.1')).remaining).toBe(1);
  });
});
