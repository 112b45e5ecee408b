import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const support = (file: string): string => fileURLToPath(new URL(`../support/${file}`, import.meta.url));

/**
 * @nestjs/graphql, @nestjs/websockets, @nestjs/microservices, ioredis and pg are optional: an HTTP-only
 * application on the memory store must load none of them (nor graphql, socket.io or ws), so it can run
 * without them installed.
 */
describe('an HTTP-only application', () => {
  it('is limited and loads none of the optional packages (the contexts, ioredis, pg)', () => {
    const run = spawnSync(process.execPath, ['--import', support('load-recorder.mjs'), support('http-only-app.mjs')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe('200 "hello";r=9;t=6');
    expect(run.stderr.split('\n').filter((line) => line.startsWith('loaded:'))).toEqual([]);
  });
});

describe('an application without ioredis and pg installed', () => {
  const run = (store: string) =>
    spawnSync(process.execPath, ['--import', support('without-peers.mjs'), support('peer-app.mjs'), store], {
      encoding: 'utf8',
      timeout: 30_000,
    }).stdout.trim();

  it('runs on the memory store', () => {
    expect(run('memory')).toBe('200');
  });

  it.each([
    ['redis', 'nest-rate-limit: the `redis` option needs the ioredis package: npm install ioredis'],
    ['postgres', 'nest-rate-limit: the `postgres` option needs the pg package: npm install pg'],
  ])('with the %s option set, stops with an error naming the package to install', (store, message) => {
    expect(run(store)).toBe(message);
  });
});
