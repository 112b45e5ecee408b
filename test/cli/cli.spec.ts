import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';

import { runCli } from '../../lib/cli/run.js';
import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { tenantOf } from '../support/policies.js';
import { storeOptions, storeServers } from '../support/store-options.js';
import { waitFor } from '../support/wait.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SECRET = 'a secret of the spec, 32 characters';

@Controller()
class TenantController {
  // Anchored at the first request: a window of a day that no midnight ends while the spec runs.
  @Get('tenant')
  @RateLimit({
    name: 'per-tenant',
    algorithm: 'fixed-window',
    anchor: 'first-request',
    limit: 3,
    window: '1d',
    key: tenantOf,
  })
  tenant() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({ name: 'bucket', algorithm: 'token-bucket', limit: 1, burst: 2, window: '1d', key: tenantOf })
  bucket() {
    return 'ok';
  }
}

const servers = storeServers();

describe.each(['redis', 'postgres'] as const)('npx nest-rate-limit on the %s store', (store) => {
  let app: INestApplication;
  let options: RateLimitModuleOptions;
  /** The store flags of the command line, as the app's options say. */
  let flags: string[];

  beforeEach(async () => {
    options = { ...storeOptions(store, servers), identitySecret: SECRET };
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot(options)],
      controllers: [TenantController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const where =
      store === 'redis'
        ? ['--redis', servers.redis.url]
        : ['--postgres', servers.db.url, '--schema', servers.db.schema];
    flags = [...where, '--prefix', options.keyPrefix as string];
  });

  afterEach(() => app.close());

  /** Runs a command in this process, as the bin does; its exit code and what it printed. */
  const cli = async (args: string[], env: NodeJS.ProcessEnv = { NEST_RATE_LIMIT_IDENTITY_SECRET: SECRET }) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli([...args, ...flags], env, { write: (t) => out.push(t), error: (t) => err.push(t) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const json = async (args: string[]): Promise<unknown> => {
    const { code, out, err } = await cli([...args, '--json']);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    return JSON.parse(out);
  };
  const get = async (path: string, tenant: string) =>
    (await request(app.getHttpServer()).get(`/${path}`).set('x-tenant', tenant)).status;

  it('lists the policies the instances recorded, with their shapes', async () => {
    expect(await json(['policies'])).toEqual([
      expect.objectContaining({ name: 'bucket', algorithm: 'token-bucket', limit: 1, burst: 2, secretMatches: true }),
      expect.objectContaining({ name: 'per-tenant', algorithm: 'fixed-window', limit: 3, burst: null, shape: 'fwf1d' }),
    ]);
    expect((await cli(['policies'])).out).toMatch(/^bucket {2}token-bucket {2}window 86400000 ms {2}limit 1, burst 2/);
  });

  it('walks through 3 a.m.: why tenant X is denied, its limit raised for two hours, taking effect', async () => {
    expect([await get('tenant', 'acme'), await get('tenant', 'acme'), await get('tenant', 'acme')]).toEqual([
      200, 200, 200,
    ]);
    expect(await get('tenant', 'acme')).toBe(429);
    expect(await json(['inspect', 'per-tenant', 'tenant:acme'])).toMatchObject({
      policy: 'per-tenant',
      identity: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      limit: 3,
      remaining: 0,
      blockedUntil: null,
      override: null,
    });

    const set = await json([
      'override',
      'set',
      'per-tenant',
      'tenant:acme',
      '--limit',
      '10',
      '--ttl',
      '2h',
      '--reason',
      'launch',
    ]);
    expect(set).toMatchObject({ policy: 'per-tenant', limit: 10, reason: 'launch', shadow: false });
    // The app heard it on the feed of changes: seven more today.
    await waitFor(async () => (await get('tenant', 'acme')) === 200, 'the app applies the override');
    expect(await json(['inspect', 'per-tenant', 'tenant:acme'])).toMatchObject({
      limit: 10,
      remaining: 6,
      override: set,
    });
    expect(await json(['override', 'ls'])).toEqual([set]);
    expect(await json(['override', 'ls', 'bucket'])).toEqual([]);
    // The app reads the same override: its service lists it.
    expect(await json(['override', 'rm', 'per-tenant', 'tenant:acme'])).toEqual({ removed: true });
    await waitFor(async () => (await get('tenant', 'acme')) === 429, 'the app drops the override');
    expect(await json(['override', 'ls'])).toEqual([]);
  });

  it('blocks, unblocks and resets a key, and every instance hears of it', async () => {
    expect(await get('tenant', 'bob')).toBe(200);
    expect(await json(['block', 'per-tenant', 'tenant:bob', '--for', '15m'])).toEqual({
      blockedUntil: expect.any(String),
    });
    expect(await get('tenant', 'bob')).toBe(429);
    expect(await json(['inspect', 'per-tenant', 'tenant:bob'])).toMatchObject({ blockedUntil: expect.any(String) });
    expect(await json(['unblock', 'per-tenant', 'tenant:bob'])).toEqual({ unblocked: true });
    await waitFor(async () => (await get('tenant', 'bob')) === 200, 'the app lifts its cached denial');
    expect(await get('tenant', 'bob')).toBe(200);
    expect(await get('tenant', 'bob')).toBe(429);
    expect(await json(['reset', 'per-tenant', 'tenant:bob'])).toEqual({ reset: true });
    await waitFor(async () => (await get('tenant', 'bob')) === 200, 'the app forgets what bob used');
  });

  it('says what is wrong: a store it cannot reach, a policy it does not know, a secret that is not theirs', async () => {
    const unreachable = await runCli(
      ['policies', '--redis', 'redis://127.0.0.1:1'],
      {},
      { write: () => {}, error: () => {} },
    );
    expect(unreachable).toBe(1);
    const refused = await cli(['inspect', 'nope', 'tenant:x']);
    expect(refused).toMatchObject({ code: 1, err: expect.stringMatching(/no policy "nope".*"bucket", "per-tenant"/) });
    const wrongSecret = await cli(['inspect', 'per-tenant', 'tenant:x'], {
      NEST_RATE_LIMIT_IDENTITY_SECRET: 'another secret of 32 characters!',
    });
    expect(wrongSecret).toMatchObject({ code: 1, err: expect.stringMatching(/identity secret does not match/) });
    expect((await cli(['inspect', 'per-tenant', 'tenant:x'], {})).err).toMatch(/identity secret does not match/);
    const badLimit = await cli(['override', 'set', 'per-tenant', 'tenant:x', '--limit', '0']);
    expect(badLimit).toMatchObject({ code: 1, err: expect.stringMatching(/--limit: limit must be an integer >= 1/) });
    const noBurst = await cli(['override', 'set', 'per-tenant', 'tenant:x', '--burst', '4']);
    expect(noBurst).toMatchObject({
      code: 1,
      err: expect.stringMatching(/--burst: a fixed-window policy has no burst/),
    });
    expect((await cli(['block', 'per-tenant', 'tenant:x'])).err).toMatch(/--for <duration>/);
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['inspect', 'per-tenant'])).code).toBe(2);
    expect((await cli(['override', 'set', '--help'])).out).toMatch(/override set <policy> <identity>/);
    // Nothing was changed by the refused commands.
    expect(await json(['override', 'ls'])).toEqual([]);
  });

  it('runs as the package bin, printing JSON for scripts', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'dist/cli/main.js'), 'policies', '--json', ...flags],
      {
        env: { ...process.env, NEST_RATE_LIMIT_IDENTITY_SECRET: SECRET },
      },
    );
    expect((JSON.parse(stdout) as { name: string }[]).map((p) => p.name)).toEqual(['bucket', 'per-tenant']);
  });
});
