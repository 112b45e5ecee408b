// Loaded with `node --import ./bench/peers.mjs`. The built library (../dist) imports its peer dependencies
// (@nestjs/common, @nestjs/core, ioredis, reflect-metadata, rxjs) by name, which Node would resolve from the
// repository's node_modules: a second copy of Nest beside the bench's, and Nest's dependency injection does
// not work across two copies (Reflector, HttpAdapterHost... are different classes). This hook resolves those
// names for ../dist (and the builds named below) as if they were imported from bench/, so the app, the library and @nestjs/throttler share
// the bench's one copy of each. The library's own dependencies (cluster-key-slot, proxy-addr...) still come
// from the repository's node_modules.
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

// BENCH_DIST, BENCH_BASELINE_DIST: other builds of the library, measured beside this one (app.mjs, features.mjs)
const DISTS = ['../dist', process.env.BENCH_DIST, process.env.BENCH_BASELINE_DIST]
  .filter((dist) => dist !== undefined)
  .map((dist) => new URL(`${dist}/`, import.meta.url).href);
const FROM_BENCH = new URL('./app.mjs', import.meta.url).href;
const PEERS = /^(@nestjs\/common|@nestjs\/core|ioredis|reflect-metadata|rxjs)(\/|$)/;

export async function resolve(specifier, context, nextResolve) {
  if (DISTS.some((dist) => context.parentURL?.startsWith(dist)) && PEERS.test(specifier)) {
    return nextResolve(specifier, { ...context, parentURL: FROM_BENCH });
  }
  return nextResolve(specifier, context);
}

// The hooks run on a thread of their own: register them from the main thread only.
if (isMainThread) register(import.meta.url);
