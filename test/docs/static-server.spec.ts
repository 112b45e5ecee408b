import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveStatic } from '../support/static-server.js';

describe('serveStatic (the browser tests serve the built site with it)', () => {
  let dir: string;
  let site: Awaited<ReturnType<typeof serveStatic>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'static-server-'));
    await mkdir(join(dir, 'guide'));
    await writeFile(join(dir, 'index.html'), '<h1>home</h1>');
    await writeFile(join(dir, 'page.html'), '<h1>page</h1>');
    await writeFile(join(dir, 'guide', 'index.html'), '<h1>guide</h1>');
    await writeFile(join(dir, 'app.js'), 'export {};');
    await writeFile(join(dir, '..', `${dir.split('/').pop()}-secret.txt`), 'outside');
    site = await serveStatic(dir);
  });

  afterAll(async () => {
    await site.close();
    await rm(`${dir}-secret.txt`, { force: true });
    await rm(dir, { recursive: true, force: true });
  });

  it('serves files with their content type, a directory its index.html, a clean URL its .html', async () => {
    const js = await fetch(`${site.url}/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await (await fetch(`${site.url}/`)).text()).toBe('<h1>home</h1>');
    expect(await (await fetch(`${site.url}/guide/`)).text()).toBe('<h1>guide</h1>');
    expect(await (await fetch(`${site.url}/page`)).text()).toBe('<h1>page</h1>');
  });

  it('answers 404 for what is missing and for a path that climbs out of the directory', async () => {
    expect((await fetch(`${site.url}/missing.html`)).status).toBe(404);
    const name = `${dir.split('/').pop()}-secret.txt`;
    expect((await fetch(`${site.url}/..%2F${name}`)).status).toBe(404);
  });
});
