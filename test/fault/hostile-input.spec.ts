import { Body, Controller, Get, type INestApplication, Post, Query } from '@nestjs/common';
import request from 'supertest';

import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { type TrustProxy } from '../../lib/nest/rate-limit.options.js';
import { storageKey } from '../../lib/stores/storage-key.js';
import { FakeClock } from '../../lib/testing/index.js';
import { ADAPTERS, createApp } from '../support/nest-app.js';
import { redisForSpec } from '../support/redis-server.js';
import { CapturingLogger } from '../support/log-lines.js';
import { TEST_START_MS } from '../support/time.js';

const COSTS: Record<string, unknown> = {
  nan: NaN,
  negative: -1,
  fraction: 0.5,
  infinite: Infinity,
  huge: 1e300,
  string: '5',
  object: {},
  missing: undefined,
};

interface Req {
  query: Record<string, string>;
  body: { id?: string };
}

@Controller()
class HostileController {
  @Get('ip')
  @RateLimit({ name: 'ip', algorithm: 'fixed-window', limit: 1, window: '1m', key: 'ip' })
  ip() {
    return 'ok';
  }

  @Post('identity')
  @RateLimit({
    name: 'identity',
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    key: (ctx) => ctx.switchToHttp().getRequest<Req>().body.id,
  })
  identity(@Body() body: { id: string }) {
    return body.id.length;
  }

  @Get('cost-open')
  @RateLimit({
    name: 'cost-open',
    algorithm: 'token-bucket',
    limit: 100,
    window: '1m',
    key: 'ip',
    cost: (ctx) => COSTS[String(ctx.switchToHttp().getRequest<Req>().query.kind)] as number,
  })
  costOpen(@Query('kind') kind: string) {
    return kind;
  }

  @Get('cost-closed')
  @RateLimit({
    name: 'cost-closed',
    algorithm: 'token-bucket',
    limit: 100,
    window: '1m',
    key: 'ip',
    failMode: 'closed',
    cost: (ctx) => COSTS[String(ctx.switchToHttp().getRequest<Req>().query.kind)] as number,
  })
  costClosed(@Query('kind') kind: string) {
    return kind;
  }
}

describe.each(ADAPTERS)('hostile input on %s', (adapter) => {
  const redis = redisForSpec();
  let app: INestApplication;
  let prefixes = 0;
  afterEach(() => app?.close());

  async function appWith(trustProxy?: TrustProxy, keyPrefix = `h${++prefixes}:`) {
    ({ app } = await createApp(adapter, {
      imports: [RateLimitModule.forRoot({ redis: { url: redis.url }, trustProxy, keyPrefix })],
      controllers: [HostileController],
    }));
    return keyPrefix;
  }
  const fromIp = (xff: string) => request(app.getHttpServer()).get('/ip').set('x-forwarded-for', xff);

  it('counts a flood of distinct forged X-Forwarded-For values from one untrusted peer against that peer', async () => {
    await appWith();
    const forged = [
      '198.51.100.1',
      'garbage',
      '',
      ',,,',
      '1.2.3.4:5678',
      '[2001:db8::1]:443',
      'fe80::1%eth0',
      Array.from({ length: 1000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`).join(', '),
      'x'.repeat(8000),
      ...Array.from({ length: 200 }, (_, i) => `203.0.113.${i}`),
    ];
    const statuses = [];
    for (const xff of forged) statuses.push((await fromIp(xff)).status);
    expect(statuses[0]).toBe(200);
    expect(statuses.slice(1).every((s) => s === 429)).toBe(true);
  });

  it('gives every malformed forwarded value from a trusted proxy a defined identity', async () => {
    await appWith('loopback');
    // [forwarded value, status]: a 429 shows the value mapped to an identity seen before (limit 1 per identity)
    const steps: [string, number][] = [
      ['garbage', 200], // not an IP: keyed by the address of the proxy that sent it (127.0.0.1)
      [' , ,', 429], // empty items: the same
      ['127.0.0.1', 429],
      ['1.2.3.4:5678', 200], // a port is dropped
      ['1.2.3.4', 429],
      ['[2001:db8:5::1]:443', 200], // brackets and port dropped, keyed by /64
      ['2001:db8:5::ffff', 429],
      ['fe80::1%eth0', 200], // zone id dropped
      ['fe80::2', 429],
      ['::ffff:198.51.100.9', 200], // IPv4-mapped is IPv4
      ['198.51.100.9', 429],
      [Array.from({ length: 1000 }, () => '192.0.2.77').join(','), 200], // 1,000 hops: only the nearest counts
      ['192.0.2.77', 429],
    ];
    for (const [xff, status] of steps)
      expect([xff.slice(0, 30), (await fromIp(xff)).status]).toEqual([xff.slice(0, 30), status]);
  });

  it('hashes identities with braces, colons, newlines or 10 KB of text, and still counts each of them', async () => {
    const keyPrefix = await appWith();
    const ids = ['a{b}c', '{evil}', 'a:b:c', 'line\nbreak', 'x'.repeat(10_000), 'ünïcödé', 'user-42'];
    for (const id of ids) {
      const send = () => request(app.getHttpServer()).post('/identity').send({ id });
      expect((await send()).status).toBe(201);
      expect((await send()).status).toBe(429);
    }
    // Beside the keys of the identities, the policies the instance recorded at start.
    const all = await redis.shared.keys(`${keyPrefix}*`);
    expect(all.filter((key) => !key.includes('{'))).toEqual([`${keyPrefix}policies`]);
    const keys = all.filter((key) => key.includes('{'));
    expect(keys.sort()).toEqual(ids.map((id) => storageKey(keyPrefix, { id: 'identity', shape: 'fw1m' }, id)).sort());
    for (const key of keys) expect(key).toMatch(new RegExp(`^${keyPrefix}\\{identity:[A-Za-z0-9_-]{16}\\}$`));
  });

  it('never lets a bad cost through as free: fail open admits and reports, fail closed answers 503', async () => {
    await appWith();
    for (const kind of Object.keys(COSTS)) {
      const open = await request(app.getHttpServer()).get(`/cost-open?kind=${kind}`);
      const closed = await request(app.getHttpServer()).get(`/cost-closed?kind=${kind}`);
      if (kind === 'missing') {
        // a cost function returning undefined is a bad cost too
        expect([open.status, closed.status]).toEqual([200, 503]);
        continue;
      }
      expect([kind, open.status, closed.status]).toEqual([kind, 200, 503]);
      expect(open.headers['ratelimit']).toBeUndefined();
    }
    // and a huge but valid cost can never fit: 429 with a message, not a 503 and not a pass
    COSTS.big = 1e15;
    const big = await request(app.getHttpServer()).get('/cost-open?kind=big');
    expect(big.status).toBe(429);
    expect(big.body.message).toMatch(/can never be allowed/);
    delete COSTS.big;
  });
});

describe('start-up warnings about the proxy setup', () => {
  async function start(trustProxy?: TrustProxy): Promise<[INestApplication, CapturingLogger]> {
    const capture = new CapturingLogger();
    const metadata = { imports: [RateLimitModule.forRoot({ trustProxy })], controllers: [HostileController] };
    const { app } = await createApp('express', metadata, new FakeClock(TEST_START_MS), { logger: capture });
    return [app, capture];
  }

  it('warns when every hop is trusted', async () => {
    const [app, capture] = await start(true);
    expect(capture.lines.filter((l) => l.includes('trustProxy is true'))).toHaveLength(1);
    await app.close();
  });

  it('warns once that limits are per process on the memory store, and once when X-Forwarded-For arrives untrusted', async () => {
    const [app, capture] = await start();
    expect(capture.lines.filter((l) => l.includes('in-memory store'))).toHaveLength(1);
    for (let i = 0; i < 3; i++) await request(app.getHttpServer()).get('/ip').set('x-forwarded-for', `198.51.100.${i}`);
    expect(capture.lines.filter((l) => l.includes('carried X-Forwarded-For but trustProxy is off'))).toHaveLength(1);
    await app.close();
  });
});
