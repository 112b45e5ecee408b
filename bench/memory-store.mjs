// Heap used by an in-memory store holding N keys:
// `node --expose-gc --import ./bench/peers.mjs bench/memory-store.mjs <subject> <keys>`, subject one of the
// algorithms (MemoryRateLimitStore, one policy, one consume per identity `user:<n>`) or 'throttler'
// (@nestjs/throttler's ThrottlerStorageService, keyed as ThrottlerGuard keys: a SHA-256 in hex). Heap measured
// after a full GC before and after. Prints one line of JSON.
import { createHash } from 'node:crypto';

import { ThrottlerStorageService } from '@nestjs/throttler';

import { MemoryRateLimitStore, validatePolicy } from '../dist/index.js';

const [subject, keysArg] = process.argv.slice(2);
const keys = Number(keysArg);
if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');

function heapUsed() {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
}

let store;
let write;
if (subject === 'throttler') {
  store = new ThrottlerStorageService();
  const key = (i) => createHash('sha256').update(`HelloController-hello-default-user:${i}`).digest('hex');
  write = (i) => store.increment(key(i), 3_600_000, 100, 3_600_000, 'default');
} else {
  // maxKeys above the count, so nothing is evicted; a window long enough that nothing expires meanwhile
  store = new MemoryRateLimitStore({ maxKeys: keys + 1 });
  const policy = validatePolicy({ name: 'per-user', algorithm: subject, limit: 100, window: '1h' });
  write = (i) => store.consume([{ policy, key: `user:${i}`, cost: 1 }]);
}

const before = heapUsed();
const start = performance.now();
for (let i = 0; i < keys; i++) await write(1_000_000 + i);
const seconds = (performance.now() - start) / 1000;
const after = heapUsed();
const held = subject === 'throttler' ? store.storage.size : store.size;
if (subject === 'throttler') store.onApplicationShutdown();
process.stdout.write(
  `${JSON.stringify({ subject, keys: held, heapBytes: after - before, bytesPerKey: (after - before) / held, writesPerSec: keys / seconds })}\n`,
);
