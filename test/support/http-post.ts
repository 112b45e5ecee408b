import { request as httpRequest } from 'node:http';
import type { AddressInfo, Server } from 'node:net';

/**
 * A POST to `path` on a socket of its own (so that the test can hold or drop it while others run); `status`
 * resolves with the response's status once it has ended, or undefined when the request failed or was aborted.
 */
export function postOn(server: Server, path: string): { status: Promise<number | undefined>; abort: () => void } {
  const { port } = server.address() as AddressInfo;
  const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST' });
  const status = new Promise<number | undefined>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(undefined));
    req.on('close', () => resolve(undefined));
  });
  req.end();
  return { status, abort: () => req.destroy() };
}
