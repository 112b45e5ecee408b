import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';

/** What a built site serves; anything else goes out as bytes. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
};

/** The file a URL path names under `root`, or undefined when it names nothing there (or climbs out of it). */
async function fileFor(root: string, urlPath: string): Promise<string | undefined> {
  const decoded = decodeURIComponent(urlPath);
  const candidate = normalize(join(root, decoded));
  if (candidate !== root && !candidate.startsWith(root + sep)) return undefined;
  // A directory serves its index.html, as a static host does; `/guide` falls back to `/guide.html` for
  // clean URLs.
  for (const path of [candidate, join(candidate, 'index.html'), `${candidate}.html`]) {
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) return path;
  }
  return undefined;
}

/**
 * Serves the files of `dir` on a free loopback port, for a browser test of a built static site (404 for what is
 * not there, so a broken link shows up as a failed request). `close()` stops it.
 * @example const site = await serveStatic('docs/.vitepress/dist'); await page.goto(`${site.url}/guide.html`);
 */
export async function serveStatic(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const root = resolve(dir);
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    fileFor(root, path)
      .then(async (file) => {
        if (file === undefined) {
          response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found: ${path}`);
          return;
        }
        const body = await readFile(file);
        const type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
        response.writeHead(200, { 'content-type': type, 'content-length': body.length }).end(body);
      })
      .catch((error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(String(error));
      });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolveListen());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolveClose, reject) => {
        // A browser keeps connections alive; closing them lets the server stop at once.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolveClose()));
      }),
  };
}
