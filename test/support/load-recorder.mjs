// Loaded with `node --import ./test/support/load-recorder.mjs`: reports on stderr, one line each, every
// module specifier of the optional packages (contexts, Redis clients, pg) that the built package (dist/) resolves
// ("loaded: <specifier>"). Nest itself probes for @nestjs/websockets and @nestjs/microservices at start,
// which is not this package's doing.
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const OPTIONAL =
  /^(@nestjs\/(graphql|apollo|mercurius|websockets|platform-socket\.io|platform-ws|microservices)|graphql|socket\.io|ws|ioredis|iovalkey|redis|@valkey\/valkey-glide|pg)(\/|$)/;

const DIST = new URL('../../dist/', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (OPTIONAL.test(specifier) && context.parentURL?.startsWith(DIST)) process.stderr.write(`loaded: ${specifier}\n`);
  return nextResolve(specifier, context);
}

if (isMainThread) register(import.meta.url);
