// Store micro-benchmark, in a process of its own:
// `node --import ./bench/peers.mjs bench/micro.mjs <redisUrl> <seconds> <repetitions>`.
// Calls per second of RedisRateLimitStore.consume() (one GCRA policy, keys spread over 10,000 identities) with
// 50 and 200 calls in flight, next to the same EVALSHA sent straight through ioredis (the store's own cost
// removed) and rate-limiter-flexible's RateLimiterRedis.consume(), on the same Redis, one connection each.
// Every measurement is repeated, interleaved, and the median kept. Prints one line of JSON.
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

import { RedisRateLimitStore, validatePolicy } from '../dist/index.js';
import { RATE_LIMIT_FUNCTION, RATE_LIMIT_SCRIPT, RATE_LIMIT_SCRIPT_SHA } from '../dist/stores/redis/rate-limit.lua.js';
import { StoredIdentities } from '../dist/stores/storage-key.js';

const [redisUrl, secondsArg, repetitionsArg = '1'] = process.argv.slice(2);
const seconds = Number(secondsArg);
const repetitions = Number(repetitionsArg);
const KEYS = 10_000;
// GCRA holds a limit exactly only when its emission interval is a whole µs (validation refuses others):
// 60,000,000 a minute is one per µs, still far above what is sent.
const LIMIT = 60_000_000;

/** Runs `call(i)` with `concurrency` calls in flight for `ms`; returns calls per second. */
async function measure(call, concurrency, ms) {
  let done = 0;
  let next = 0;
  const deadline = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await call(next++ % KEYS);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

const policy = validatePolicy({ name: 'micro', algorithm: 'gcra', limit: LIMIT, window: '1m' });
const identities = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
// the keys the store makes: each identity as its keyed hash
const stored = new StoredIdentities('rl:', {});
const keys = identities.map((id) => stored.key(policy, id));

const clients = [];
const client = () => {
  const redis = new Redis(redisUrl);
  clients.push(redis);
  return redis;
};

const store = new RedisRateLimitStore({ client: client() });
await store.load(); // the function on Redis 7 (the script elsewhere)
const raw = client();
await raw.script('LOAD', RATE_LIMIT_SCRIPT); // for the raw EVALSHA row
const flexible = new RateLimiterRedis({ storeClient: client(), points: LIMIT, duration: 60, keyPrefix: 'rlflx' });

/** The keys and arguments RedisRateLimitStore.run sends for one GCRA consume of `keys[i]`. */
const callArgs = (i) => [
  1,
  keys[i],
  'consume',
  String(Date.now()),
  '1000',
  '5',
  String(LIMIT),
  '60000',
  String(LIMIT),
  '1',
];

const subjects = {
  'RedisRateLimitStore.consume()': (i) => store.consume([{ policy, key: identities[i], cost: 1 }]),
  // what RedisRateLimitStore.run sends for this consume (with the clock read locally), without the store
  'ioredis fcall, same function and arguments': (i) => raw.call('FCALL', RATE_LIMIT_FUNCTION, ...callArgs(i)),
  // the same code as a script (what a Cluster, or a Redis before 7, runs)
  'ioredis evalsha, same script and arguments': (i) => raw.evalsha(RATE_LIMIT_SCRIPT_SHA, ...callArgs(i)),
  'rate-limiter-flexible RateLimiterRedis.consume()': (i) => flexible.consume(identities[i]),
};

const ms = seconds * 1000;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};
for (const call of Object.values(subjects)) await measure(call, 50, 1000); // warm-up
const samples = new Map();
for (let r = 0; r < repetitions; r++) {
  for (const concurrency of [50, 200]) {
    for (const [name, call] of Object.entries(subjects)) {
      const key = `${concurrency}\t${name}`;
      samples.set(key, [...(samples.get(key) ?? []), await measure(call, concurrency, ms)]);
    }
  }
}
const results = [...samples].map(([key, values]) => {
  const [concurrency, name] = key.split('\t');
  return { name, concurrency: Number(concurrency), opsPerSec: median(values), samples: values };
});
for (const redis of clients) redis.disconnect();
process.stdout.write(`${JSON.stringify(results)}\n`);
