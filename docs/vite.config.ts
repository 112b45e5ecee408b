import { fileURLToPath } from 'node:url';

import type { Plugin } from 'vite';

/**
 * The playground (playground.md) runs the library's simulator in the browser. It checks its policies with
 * validatePolicy, whose module also compiles allow and deny lists with `isIP` from node:net; a simulated policy
 * has no lists, so the browser never calls it, but the client bundle must still resolve the import. This gives
 * the client build a node:net whose `isIP` says why it is missing; the server-side render keeps Node's own.
 */
function nodeNetForTheBrowser(): Plugin {
  const shim = fileURLToPath(new URL('./.vitepress/theme/playground/node-net.browser.ts', import.meta.url));
  return {
    name: 'nest-rate-limit:node-net-for-the-browser',
    enforce: 'pre',
    resolveId(id, _importer, options) {
      return (id === 'node:net' || id === 'net') && options?.ssr !== true ? shim : undefined;
    },
  };
}

// VitePress reads this file as Vite's own configuration of the site (its root is docs/), beside
// .vitepress/config.mts.
export default { plugins: [nodeNetForTheBrowser()] };
