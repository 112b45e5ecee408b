/**
 * node:net in the docs site's client bundle (see docs/vite.config.ts): the simulator's policies have no
 * address lists, so nothing in the browser asks whether a string is an IP address.
 */
export function isIP(input: string): number {
  throw new Error(
    `node:net isIP(${JSON.stringify(input)}) is not available in the browser: the playground's policies have no address lists`,
  );
}
