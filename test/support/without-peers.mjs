// Loaded with `node --import ./test/support/without-peers.mjs`: ioredis and pg cannot be found, as in an app
// that did not install them.
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

export async function resolve(specifier, context, nextResolve) {
  if (/^(ioredis|pg)(\/|$)/.test(specifier)) {
    const error = new Error(`Cannot find package '${specifier}' (hidden by without-peers.mjs)`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return nextResolve(specifier, context);
}

if (isMainThread) register(import.meta.url);
