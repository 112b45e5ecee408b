import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const support = (file: string): string => fileURLToPath(new URL(`../support/${file}`, import.meta.url));

/**
 * @nestjs/graphql, @nestjs/websockets and @nestjs/microservices are optional: an HTTP-only application must
 * load none of them (nor graphql, socket.io or ws), so it can run without them installed.
 */
describe('an HTTP-only application', () => {
  it('is limited and loads none of the optional context packages', () => {
    const run = spawnSync(process.execPath, ['--import', support('load-recorder.mjs'), support('http-only-app.mjs')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe('200 "hello";r=9;t=6');
    expect(run.stderr.split('\n').filter((line) => line.startsWith('loaded:'))).toEqual([]);
  });
});
