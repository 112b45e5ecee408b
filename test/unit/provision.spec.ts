import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, test } from '@jest/globals';

import { decidePostgres, decideTools, installHint, missingToolsError, packageManagerOf } from '../provision/decide.mjs';
import { provisionTools } from '../provision/provision.mjs';

// What npm test does about each need (test/provision/), decided from what it found; the probes are real only
// in the last tests, on a PATH the test makes.

const DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n';
const UBUNTU = 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n';
const FEDORA = 'NAME="Fedora Linux"\nID=fedora\n';
const ROCKY = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\n';

describe('the package manager a hint names', () => {
  test.each([
    ['linux', DEBIAN, 'apt'],
    ['linux', UBUNTU, 'apt'],
    ['linux', FEDORA, 'dnf'],
    ['linux', ROCKY, 'dnf'],
    ['darwin', '', 'brew'],
    ['linux', 'ID=arch\n', undefined],
    ['win32', '', undefined],
  ])('%s with %j: %s', (platform, osRelease, manager) => {
    expect(packageManagerOf(platform, osRelease)).toBe(manager);
  });
});

describe('redis-server and chromium', () => {
  test('found on the PATH: used where they are, nothing installed', () => {
    const found = { 'redis-server': '/usr/local/bin/redis-server', chromium: '/usr/bin/chromium' };
    expect(decideTools(found, { manager: 'apt', root: true })).toEqual([
      { tool: 'redis-server', action: 'found', path: '/usr/local/bin/redis-server' },
      { tool: 'chromium', action: 'found', path: '/usr/bin/chromium' },
    ]);
  });

  test("missing as root on Debian or Ubuntu: installed with apt-get, Debian's packages", () => {
    expect(decideTools({ 'redis-server': undefined, chromium: undefined }, { manager: 'apt', root: true })).toEqual([
      { tool: 'redis-server', action: 'install', package: 'redis-server' },
      { tool: 'chromium', action: 'install', package: 'chromium' },
    ]);
  });

  test.each([
    ['apt', false, 'sudo apt-get install redis-server', 'sudo apt-get install chromium'],
    ['dnf', true, 'sudo dnf install redis', 'sudo dnf install chromium'],
    ['dnf', false, 'sudo dnf install redis', 'sudo dnf install chromium'],
    ['brew', false, 'brew install redis', 'brew install --cask chromium'],
  ] as const)('missing with %s, root %s: the command that installs each there', (manager, root, redis, chromium) => {
    expect(decideTools({ 'redis-server': undefined, chromium: undefined }, { manager, root })).toEqual([
      { tool: 'redis-server', action: 'missing', hint: redis },
      { tool: 'chromium', action: 'missing', hint: chromium },
    ]);
  });

  test('missing on a platform of no known package manager: the command of each', () => {
    expect(installHint('redis-server', undefined)).toBe(
      'sudo apt-get install redis-server (apt), sudo dnf install redis (dnf), brew install redis (brew)',
    );
  });

  test('every missing tool in one error, each with its command; none when nothing is missing', () => {
    const decisions = decideTools({ 'redis-server': undefined, chromium: undefined }, { manager: 'apt', root: false });
    expect(missingToolsError(decisions)).toBe(
      'npm test needs redis-server and chromium, not found on the PATH (it installs what is missing itself only ' +
        'as root on Debian or Ubuntu):\n' +
        '  redis-server (the Redis tests start their own redis-server): sudo apt-get install redis-server\n' +
        "  chromium (the docs' browser tests drive it): sudo apt-get install chromium",
    );
    expect(
      missingToolsError(decideTools({ 'redis-server': '/usr/bin/redis-server' }, { manager: 'apt', root: false })),
    ).toBe(undefined);
  });

  test("the other tiers' missing tools are named in the same error, and stop nothing alone", () => {
    const debianUser = { manager: 'apt', root: false } as const;
    const redis = decideTools({ 'redis-server': undefined }, debianUser);
    const chromium = decideTools({ chromium: undefined }, debianUser);
    expect(missingToolsError(redis, chromium)).toBe(
      'npm test needs redis-server, not found on the PATH (it installs what is missing itself only as root on ' +
        'Debian or Ubuntu):\n' +
        '  redis-server (the Redis tests start their own redis-server): sudo apt-get install redis-server\n' +
        'and, for the other tiers of npm test:\n' +
        "  chromium (the docs' browser tests drive it): sudo apt-get install chromium",
    );
    expect(missingToolsError(decideTools({ 'redis-server': '/usr/bin/redis-server' }, debianUser), chromium)).toBe(
      undefined,
    );
  });
});

describe('PostgreSQL', () => {
  const DEFAULT = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };

  test('a server PGHOST names is used when it answers', () => {
    const env = { PGHOST: 'db.internal', PGPORT: '6543', PGUSER: 'ci', PGDATABASE: 'limits' };
    expect(decidePostgres(env, { answer: 'ok' })).toEqual({
      use: 'configured',
      target: { host: 'db.internal', port: 6543, user: 'ci', database: 'limits' },
      createDatabase: false,
    });
  });

  test('a server PGHOST names that does not answer stops the run: no embedded server hides it', () => {
    expect(decidePostgres({ PGHOST: 'db.internal' }, { answer: 'refused' })).toEqual({
      use: 'none',
      error:
        'PostgreSQL at db.internal:5432 (PGHOST) is not usable: nothing answers there. Start it, or unset PGHOST ' +
        'for npm test to use the server at 127.0.0.1:5432 or start one of its own.',
    });
    expect(
      decidePostgres({ PGHOST: 'db.internal' }, { answer: 'error', message: 'password authentication failed' }),
    ).toMatchObject({ use: 'none', error: expect.stringContaining('is not usable: password authentication failed') });
  });

  test('a server running at 127.0.0.1:5432 is used; one without the database gets it created', () => {
    expect(decidePostgres({}, { answer: 'ok' })).toEqual({ use: 'running', target: DEFAULT, createDatabase: false });
    expect(decidePostgres({}, { answer: 'no-database' })).toEqual({
      use: 'running',
      target: DEFAULT,
      createDatabase: true,
    });
  });

  test('nothing at 127.0.0.1:5432, or at PGPORT: an embedded server, for the same user and database', () => {
    expect(decidePostgres({}, { answer: 'refused' })).toEqual({
      use: 'embedded',
      target: DEFAULT,
      reason: 'nothing answers at 127.0.0.1:5432',
    });
    expect(decidePostgres({ PGPORT: '5999', PGDATABASE: 'other' }, { answer: 'refused' })).toEqual({
      use: 'embedded',
      target: { ...DEFAULT, port: 5999, database: 'other' },
      reason: 'nothing answers at 127.0.0.1:5999',
    });
  });

  test('a running server that refuses the tests (a password, say): an embedded server, with the reason', () => {
    const probe = { answer: 'error', message: 'password authentication failed for user "postgres"' } as const;
    expect(decidePostgres({}, probe)).toEqual({
      use: 'embedded',
      target: DEFAULT,
      reason: '127.0.0.1:5432 answers: password authentication failed for user "postgres"',
    });
  });
});

describe('the real look-up, on a PATH this test makes', () => {
  const bin = mkdtempSync(join(tmpdir(), 'provision-path-'));
  afterAll(() => rmSync(bin, { recursive: true, force: true }));

  test('a redis-server on the PATH is found there', () => {
    writeFileSync(join(bin, 'redis-server'), '#!/bin/sh\n');
    chmodSync(join(bin, 'redis-server'), 0o755);
    expect(provisionTools(['redis-server'], { env: { PATH: `/nowhere:${bin}` } })).toEqual({
      'redis-server': join(bin, 'redis-server'),
    });
  });

  test('without redis-server on the PATH, not root: one error naming the command, nothing installed', () => {
    expect(() =>
      provisionTools(['redis-server'], { env: { PATH: '/nowhere' }, here: { manager: 'apt', root: false } }),
    ).toThrow(
      /^npm test needs redis-server, not found on the PATH.*\n {2}redis-server .*: sudo apt-get install redis-server(\n|$)/,
    );
  });
});
