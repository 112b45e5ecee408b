import { types } from 'node:util';

/** webpack's own require: a function in a webpack bundle, defined nowhere else. */
declare const __webpack_require__: unknown;
/** In a webpack bundle, Node's `require`, which webpack leaves to Node at run time instead of resolving it. */
declare const __non_webpack_require__: (id: string) => unknown;

/**
 * Loads the optional peer `name` (ioredis, pg, @opentelemetry/api, the context packages) when it is used, where
 * no bundler resolves it while it builds: an app bundled without the peers it does not use builds, and those it
 * uses come from the node_modules where it runs.
 * - In a webpack bundle, with `__non_webpack_require__`. webpack evaluates `typeof __webpack_require__` as it
 *   builds and drops the branch not taken: it reads neither the import() nor the require() of a variable that
 *   TypeScript makes of it in the CommonJS build, which webpack would turn into a "Critical dependency" warning
 *   and a require() that finds nothing at run time (a magic comment on require() counts only with
 *   `commonjsMagicComments`, off by default).
 * - Anywhere else, with import(): native in the ES module build, compiled to require() in the CommonJS build, so
 *   that Node, and Jest's module registry in either mode, load the peer as before. Other bundlers leave an
 *   import() or require() of a variable to run time; `webpackIgnore` would keep webpack off it too.
 */
export function importPeer<T>(name: string): Promise<T> {
  return typeof __webpack_require__ === 'function'
    ? Promise.resolve().then(() => asNamespace(__non_webpack_require__(name)) as T)
    : import(/* webpackIgnore: true */ name);
}

/**
 * What import() gives for what require() returned: a module namespace as it is, CommonJS exports as `default`
 * and by name.
 */
function asNamespace(exports: unknown): unknown {
  return types.isModuleNamespaceObject(exports) ? exports : { ...(exports as object), default: exports };
}
